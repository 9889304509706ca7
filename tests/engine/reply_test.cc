// GenerateReply on the real model: streamed pieces add up to the reply,
// stop strings end it and are never streamed, max_tokens and cancellation
// end it with their reasons, a follow-up keeps the session's tokens and
// answers exactly as a fresh session would, and a JSON constraint holds.
#include "ellm/engine/reply.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_env.h"

namespace ellm {
namespace {

struct Streamed {
  Reply reply;
  std::vector<std::string> pieces;
  std::string Joined() const {
    std::string s;
    for (const auto& p : pieces) s += p;
    return s;
  }
};

class ReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ELLM_REQUIRE_MODEL(path);
    auto engine = Engine::Load(path, {.threads = 2});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    auto session = engine_->NewSession({.n_ctx = 1024});
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    session_ = std::move(*session);
  }

  std::vector<TokenId> Chat(const std::string& user) {
    auto text = engine_->chat_template()->Apply({{"user", user}}, true);
    EXPECT_TRUE(text.ok());
    return engine_->tokenizer().Encode(*text, true, true);
  }

  Streamed Run(const std::vector<TokenId>& prompt, const ReplyOptions& o, Session* s = nullptr,
               int cancel_after = -1) {
    Streamed out;
    auto r = GenerateReply(
        *(s ? s : session_.get()), engine_->tokenizer(), prompt, o, [&](std::string_view t) {
          out.pieces.emplace_back(t);
          return cancel_after < 0 || static_cast<int>(out.pieces.size()) < cancel_after;
        });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.reply = *r;
    return out;
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> session_;
};

TEST_F(ReplyTest, PiecesAddUpAndStopStringsEndTheReplyUnseen) {
  const auto prompt = Chat("List three colours of the rainbow, one per line.");
  ReplyOptions o;
  o.max_tokens = 40;
  Streamed free = Run(prompt, o);
  ASSERT_GT(free.reply.completion_tokens, 3);
  EXPECT_EQ(free.Joined(), free.reply.text);
  EXPECT_EQ(free.reply.prompt_tokens, static_cast<int64_t>(prompt.size()));
  const std::string& t = free.reply.text;
  ASSERT_GT(t.size(), 8u) << t;

  // A stop string taken from the middle of the free reply: the reply ends
  // right before it, and no streamed piece ever showed any of it.
  const size_t at = t.size() / 2;
  const std::string stop = t.substr(at, 3);
  o.stop = {stop, "never-appears-here"};
  Streamed stopped = Run(prompt, o);
  EXPECT_EQ(stopped.reply.finish, FinishReason::kStop);
  EXPECT_EQ(stopped.reply.text, t.substr(0, t.find(stop)));
  EXPECT_EQ(stopped.Joined(), stopped.reply.text);
  EXPECT_EQ(stopped.Joined().find(stop), std::string::npos);
}

TEST_F(ReplyTest, MaxTokensEndsWithLengthAndCancelStops) {
  const auto prompt = Chat("Write a long story about a lighthouse keeper.");
  ReplyOptions o;
  o.max_tokens = 5;
  Streamed r = Run(prompt, o);
  EXPECT_EQ(r.reply.finish, FinishReason::kLength);
  EXPECT_EQ(r.reply.completion_tokens, 5);
  o.max_tokens = 50;
  Streamed c = Run(prompt, o, nullptr, /*cancel_after=*/2);
  EXPECT_EQ(c.reply.finish, FinishReason::kCancelled);
  EXPECT_EQ(c.pieces.size(), 2u);
  EXPECT_LT(c.reply.completion_tokens, 50);
}

// Issue 57 item 2: what the pipelines need of the one decoding loop. A
// prompt evaluated in slices gives the reply it gives at once, with
// on_prefill asked before each slice and at the end; on_step can stop the
// reply; stop_check ends it where the caller says.
TEST_F(ReplyTest, SlicedPrefillStepsAndACallersStopCheck) {
  const auto prompt = Chat("List three colours of the rainbow, one per line.");
  ReplyOptions o;
  o.max_tokens = 30;
  const std::string whole = Run(prompt, o).reply.text;
  o.reuse_prefix = false;  // the whole prompt again, not what the session kept of it
  o.prefill_slice = 7;
  std::vector<int64_t> asked;
  auto sliced = GenerateReply(*session_, engine_->tokenizer(), prompt, o, nullptr,
                              [&](int64_t done, int64_t total) {
                                EXPECT_EQ(total, static_cast<int64_t>(prompt.size()));
                                asked.push_back(done);
                                return true;
                              });
  ASSERT_TRUE(sliced.ok()) << sliced.status().ToString();
  EXPECT_EQ(sliced->text, whole);
  const size_t slices = (prompt.size() + 6) / 7;
  ASSERT_EQ(asked.size(), slices + 1);
  EXPECT_EQ(asked.front(), 0);
  EXPECT_EQ(asked.back(), static_cast<int64_t>(prompt.size()));
  // A prefill that is told to stop ends the reply as cancelled.
  auto stopped = GenerateReply(*session_, engine_->tokenizer(), prompt, o, nullptr,
                               [](int64_t done, int64_t) { return done < 14; });
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->finish, FinishReason::kCancelled);
  EXPECT_EQ(stopped->completion_tokens, 0);

  o.prefill_slice = 0;
  o.on_step = [](int64_t generated) { return generated < 4; };
  auto four = GenerateReply(*session_, engine_->tokenizer(), prompt, o, nullptr);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->finish, FinishReason::kCancelled);
  EXPECT_EQ(four->completion_tokens, 4);
  EXPECT_EQ(whole.rfind(four->text, 0), 0u) << four->text;

  o.on_step = nullptr;
  ASSERT_GT(whole.size(), 6u);
  o.stop_check = [](std::string_view t) { return t.size() >= 6 ? size_t{6} : std::string::npos; };
  auto cut = GenerateReply(*session_, engine_->tokenizer(), prompt, o, nullptr);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->finish, FinishReason::kStop);
  EXPECT_EQ(cut->text, whole.substr(0, 6));
}

TEST_F(ReplyTest, AFollowUpKeepsTheSessionAndAnswersAsAFreshSession) {
  const auto first = Chat("Name a planet.");
  ReplyOptions o;
  o.max_tokens = 8;
  Run(first, o);
  // The follow-up continues exactly what the session holds.
  std::vector<TokenId> follow(session_->tokens().begin(), session_->tokens().end());
  const auto more = engine_->tokenizer().Encode(" And another one?", false, false);
  follow.insert(follow.end(), more.begin(), more.end());
  Streamed kept = Run(follow, o);
  EXPECT_EQ(kept.reply.reused_tokens, static_cast<int64_t>(follow.size() - more.size()));

  auto fresh_session = engine_->NewSession({.n_ctx = 1024});
  ASSERT_TRUE(fresh_session.ok());
  Streamed fresh = Run(follow, o, fresh_session->get());
  EXPECT_EQ(fresh.reply.reused_tokens, 0);
  EXPECT_EQ(kept.reply.text, fresh.reply.text);

  // A different conversation keeps only the start the two share.
  const auto river = Chat("Name a river.");
  const auto shared = static_cast<int64_t>(
      std::mismatch(river.begin(), river.end(), session_->tokens().begin()).first - river.begin());
  Streamed other = Run(river, o);
  EXPECT_EQ(other.reply.reused_tokens, shared);
}

// A new conversation with the same system prompt keeps the session's tokens
// up to where the two differ (the session truncated there) and answers
// exactly as a fresh session; a session that has run far past the sliding
// window no longer holds what that start needs, and starts over.
TEST_F(ReplyTest, ASharedSystemPromptIsKeptAndAnswersAsAFreshSession) {
  const std::string system =
      "You are a terse assistant for a shipping company. Answer in one short sentence, "
      "name units, and never invent tracking numbers.";
  auto chat = [&](const std::string& user) {
    auto text = engine_->chat_template()->Apply({{"system", system}, {"user", user}}, true);
    EXPECT_TRUE(text.ok());
    return engine_->tokenizer().Encode(*text, true, true);
  };
  const auto first = chat("How heavy can a parcel be?");
  const auto second = chat("What does express delivery cost?");
  const auto shared = static_cast<int64_t>(
      std::mismatch(first.begin(), first.end(), second.begin()).first - first.begin());
  ASSERT_GT(shared, 20);
  ReplyOptions o;
  o.max_tokens = 12;
  Run(first, o);
  ASSERT_GT(session_->position(), shared);
  // The prefix as the HTTP server passes it, worked out when it chose the
  // session: the same reply as one that works it out itself.
  ReplyOptions given = o;
  given.reusable_prefix = ReusablePrefix(*session_, second);
  EXPECT_EQ(given.reusable_prefix, shared);
  Streamed kept = Run(second, given);
  EXPECT_EQ(kept.reply.reused_tokens, shared);
  auto fresh_session = engine_->NewSession({.n_ctx = 1024});
  ASSERT_TRUE(fresh_session.ok());
  Streamed fresh = Run(second, o, fresh_session->get());
  EXPECT_EQ(fresh.reply.reused_tokens, 0);
  EXPECT_EQ(kept.reply.text, fresh.reply.text);

  // Past the window: 1000 more positions move the sliding layers' rings
  // beyond the system prompt.
  auto long_session = engine_->NewSession({.n_ctx = 2048});
  ASSERT_TRUE(long_session.ok());
  std::vector<TokenId> filler(first);
  const auto more = engine_->tokenizer().Encode(" and so on", false, false);
  while (filler.size() < 1400) filler.insert(filler.end(), more.begin(), more.end());
  ASSERT_TRUE((*long_session)->Eval(filler, LogitsFor::kNone, nullptr).ok());
  EXPECT_FALSE((*long_session)->CanTruncate(shared));
  EXPECT_EQ(ReusablePrefix(**long_session, second), 0);
  Streamed over = Run(second, o, long_session->get());
  EXPECT_EQ(over.reply.reused_tokens, 0);
  EXPECT_EQ(over.reply.text, fresh.reply.text);
}

// Log probabilities: one per generated token, its piece where the text
// has it; at temperature 0 the chosen token is the most likely one; they are
// log-probabilities (<= 0, the alternatives' mass at most 1); tokens a stop
// string cut off are gone.
TEST_F(ReplyTest, LogprobsDescribeEachToken) {
  const auto prompt = Chat("List three colours of the rainbow, one per line.");
  ReplyOptions o;
  o.max_tokens = 20;
  o.sampling.temperature = 0;
  std::vector<TokenLogprob> lps;
  o.logprobs = &lps;
  o.top_logprobs = 5;
  Streamed r = Run(prompt, o);
  ASSERT_EQ(static_cast<int64_t>(lps.size()), r.reply.completion_tokens);
  std::string joined;
  for (const TokenLogprob& t : lps) {
    EXPECT_EQ(t.text_offset, joined.size());
    joined += engine_->tokenizer().TokenToPiece(t.token);
    ASSERT_EQ(t.top.size(), 5u);
    EXPECT_EQ(t.top[0].first, t.token);
    EXPECT_EQ(t.top[0].second, t.logprob);
    double mass = 0;
    for (size_t i = 0; i < t.top.size(); ++i) {
      EXPECT_LE(t.top[i].second, 0.0f);
      if (i > 0) {
        EXPECT_LE(t.top[i].second, t.top[i - 1].second);
      }
      mass += std::exp(static_cast<double>(t.top[i].second));
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
    EXPECT_GT(mass, 0.0);
  }
  EXPECT_EQ(joined, r.reply.text);

  // With a stop string from the middle: the entries end where the
  // text does.
  const std::string& t = r.reply.text;
  ASSERT_GT(t.size(), 8u);
  o.stop = {t.substr(t.size() / 2, 3)};
  lps.clear();
  Streamed stopped = Run(prompt, o);
  ASSERT_FALSE(lps.empty());
  EXPECT_LT(lps.back().text_offset, stopped.reply.text.size());
  EXPECT_LT(static_cast<int64_t>(lps.size()), stopped.reply.completion_tokens + 1);
}

TEST_F(ReplyTest, AJsonConstraintGivesAValidDocument) {
  auto c = JsonConstraint::FromSchema(
      R"({"type":"object","properties":{"colour":{"type":"string","maxLength":12}},)"
      R"("required":["colour"]})",
      engine_->tokenizer());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ReplyOptions o;
  o.max_tokens = 60;
  o.constraint = c->get();
  Streamed r = Run(Chat("What colour is the sky? Answer in JSON."), o);
  EXPECT_EQ(r.reply.finish, FinishReason::kStop);
  const auto j = nlohmann::json::parse(r.reply.text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.reply.text;
  EXPECT_TRUE(j.contains("colour") && j["colour"].is_string()) << r.reply.text;
  EXPECT_EQ(r.Joined(), r.reply.text);
}

TEST_F(ReplyTest, APromptThatFillsTheContextIsOutOfRange) {
  std::vector<TokenId> ids(
      1024, engine_->tokenizer().Find("the") >= 0 ? engine_->tokenizer().Find("the") : 100);
  auto r = GenerateReply(*session_, engine_->tokenizer(), ids, {}, nullptr);
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
}

// Batched decode: each session's logits are the ones its own Eval gives
// (the rows share only the weight products, whose per-row arithmetic does
// not depend on the other rows).
TEST_F(ReplyTest, EvalBatchGivesEachSessionItsOwnLogits) {
  const std::vector<std::vector<TokenId>> prompts = {
      Chat("Name a planet."), Chat("Write one sentence about the sea, please."), Chat("Hi")};
  std::vector<std::unique_ptr<Session>> alone, together;
  std::vector<TokenId> next;
  std::vector<std::vector<float>> expected;
  for (const auto& p : prompts) {
    for (auto* v : {&alone, &together}) {
      auto s = engine_->NewSession({.n_ctx = 1024});
      ASSERT_TRUE(s.ok());
      std::vector<float> last;
      ASSERT_TRUE(
          (*s)->Eval(p, LogitsFor::kLast,
                     [&](int64_t, std::span<const float> l) { last.assign(l.begin(), l.end()); })
              .ok());
      if (v == &alone) {
        next.push_back(
            static_cast<TokenId>(std::max_element(last.begin(), last.end()) - last.begin()));
      }
      v->push_back(std::move(*s));
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(alone[i]
                    ->Eval(std::span<const TokenId>(&next[i], 1), LogitsFor::kLast,
                           [&](int64_t, std::span<const float> l) {
                             expected.emplace_back(l.begin(), l.end());
                           })
                    .ok());
  }
  std::vector<Session*> batch = {together[0].get(), together[1].get(), together[2].get()};
  std::vector<std::vector<float>> got(prompts.size());
  ASSERT_TRUE(Session::EvalBatch(batch, next, [&](int64_t i, std::span<const float> l) {
                got[static_cast<size_t>(i)].assign(l.begin(), l.end());
              }).ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i]->position(), alone[i]->position());
    EXPECT_TRUE(std::equal(together[i]->tokens().begin(), together[i]->tokens().end(),
                           alone[i]->tokens().begin(), alone[i]->tokens().end()));
    ASSERT_EQ(got[i].size(), expected[i].size());
    float worst = 0;
    for (size_t k = 0; k < got[i].size(); ++k) {
      worst = std::max(worst, std::abs(got[i][k] - expected[i][k]));
    }
    EXPECT_EQ(worst, 0.0f) << "session " << i;
  }
  // Refusals change nothing: a session twice, a token outside the vocabulary.
  std::vector<Session*> twice = {together[0].get(), together[0].get()};
  std::vector<TokenId> two = {next[0], next[0]};
  EXPECT_EQ(Session::EvalBatch(twice, two, [](int64_t, std::span<const float>) {}).code(),
            StatusCode::kInvalidArgument);
  std::vector<TokenId> bad = {next[0], -1, next[2]};
  EXPECT_EQ(Session::EvalBatch(batch, bad, [](int64_t, std::span<const float>) {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(together[0]->position(), alone[0]->position());
}

// Replies decoding side by side through one batcher say what each says
// alone, and their steps share passes over the weights.
TEST_F(ReplyTest, RepliesThroughABatcherEqualRepliesAlone) {
  const std::vector<std::string> asks = {"Name a planet.", "Name a colour.", "Count to five.",
                                         "Say hello in French."};
  ReplyOptions o;
  o.max_tokens = 24;
  std::vector<std::string> expected;
  for (const auto& a : asks) expected.push_back(Run(Chat(a), o).reply.text);

  DecodeBatcher batcher(*engine_, {.max_batch = 4, .max_wait = std::chrono::milliseconds(50)});
  std::vector<std::unique_ptr<Session>> sessions;
  for (size_t i = 0; i < asks.size(); ++i) {
    auto s = engine_->NewSession({.n_ctx = 1024});
    ASSERT_TRUE(s.ok());
    sessions.push_back(std::move(*s));
  }
  std::vector<StatusOr<Reply>> got(asks.size(), InternalError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < asks.size(); ++i) {
    threads.emplace_back([&, i] {
      ReplyOptions b = o;
      b.batcher = &batcher;
      got[i] = GenerateReply(*sessions[i], engine_->tokenizer(), Chat(asks[i]), b, nullptr);
    });
  }
  for (auto& t : threads) t.join();
  int64_t tokens = 0;
  for (size_t i = 0; i < asks.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(got[i]->text, expected[i]) << asks[i];
    tokens += got[i]->completion_tokens;
  }
  const DecodeBatcher::Stats st = batcher.stats();
  // Each generated token is evaluated once (to give the next one's logits).
  EXPECT_EQ(st.rows, static_cast<uint64_t>(tokens));
  EXPECT_LT(st.passes * 2, st.rows) << "mean batch below 2";
}

// Members that fall out of step come back into step: two members start a
// pass late, and after that every pass still waits for the members the last
// one served (each spends a little time on its token, as sampling and
// writing a reply do) instead of the two halves taking turns, each pass half
// full. The batcher's own max_wait is shorter than one pass here.
TEST_F(ReplyTest, BatcherMembersOutOfStepComeBackIntoStep) {
  DecodeBatcher batcher(*engine_, {.max_batch = 4, .max_wait = std::chrono::milliseconds(5)});
  const std::vector<TokenId> prompt = Chat("Name a planet.");
  constexpr int kMembers = 4, kSteps = 32;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < kMembers; ++i) {
    auto s = engine_->NewSession({.n_ctx = 1024});
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Eval(prompt, LogitsFor::kNone, [](int64_t, std::span<const float>) {}).ok());
    sessions.push_back(std::move(*s));
  }
  std::vector<DecodeBatcher::Member> members;
  for (int i = 0; i < kMembers; ++i) members.push_back(batcher.Join());
  std::vector<Status> result(kMembers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kMembers; ++i) {
    threads.emplace_back([&, i] {
      // The second half arrives while the first half's pass runs.
      if (i >= kMembers / 2) std::this_thread::sleep_for(std::chrono::milliseconds(6));
      for (int step = 0; step < kSteps && result[i].ok(); ++step) {
        result[i] = batcher.Decode(*sessions[i], prompt.back(), [](int64_t, auto) {});
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& r : result) ASSERT_TRUE(r.ok()) << r.ToString();
  const DecodeBatcher::Stats st = batcher.stats();
  EXPECT_EQ(st.rows, static_cast<uint64_t>(kMembers * kSteps));
  EXPECT_GE(static_cast<double>(st.rows) / static_cast<double>(st.passes), 2.8)
      << st.rows << " rows in " << st.passes << " passes";
}

}  // namespace
}  // namespace ellm
