// GenerateReply on the real model: streamed pieces add up to the reply,
// stop strings end it and are never streamed, max_tokens and cancellation
// end it with their reasons, a follow-up keeps the session's tokens and
// answers exactly as a fresh session would, and a JSON constraint holds.
#include "ellm/engine/reply.h"

#include <gtest/gtest.h>

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

  // A different prompt starts over.
  Streamed other = Run(Chat("Name a river."), o);
  EXPECT_EQ(other.reply.reused_tokens, 0);
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

}  // namespace
}  // namespace ellm
