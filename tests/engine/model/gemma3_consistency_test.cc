// Self-consistency of the forward pass on the real model: the same tokens
// must give the same logits however they are batched (prefill vs one token
// at a time, micro-batch sizes across the sliding-window ring's wrap).
#include <gtest/gtest.h>

#include <cmath>

#include "ellm/engine/engine.h"
#include "test_env.h"

namespace ellm {
namespace {

std::vector<float> LastLogits(Engine& engine, const std::vector<TokenId>& ids, int64_t micro_batch,
                              bool one_by_one) {
  auto session = engine.NewSession({.n_ctx = 2048, .micro_batch = micro_batch});
  EXPECT_TRUE(session.ok());
  std::vector<float> last;
  auto keep = [&](int64_t, std::span<const float> l) { last.assign(l.begin(), l.end()); };
  if (one_by_one) {
    for (TokenId id : ids) {
      EXPECT_TRUE((*session)->Eval(std::span<const TokenId>(&id, 1), LogitsFor::kLast, keep).ok());
    }
  } else {
    EXPECT_TRUE((*session)->Eval(ids, LogitsFor::kLast, keep).ok());
  }
  return last;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

std::vector<TokenId> Text(Engine& e, int approx_tokens) {
  std::string s;
  while (static_cast<int>(e.tokenizer().Encode(s, true, false).size()) < approx_tokens) {
    s += "The quarterly report shows revenue of 4.2 million, up 12% on last year, while costs "
         "rose by 3%. Risks include currency exposure and a pending lawsuit in Delaware. ";
  }
  auto ids = e.tokenizer().Encode(s, true, false);
  ids.resize(static_cast<size_t>(approx_tokens));
  return ids;
}

TEST(Gemma3Consistency, PrefillEqualsTokenByTokenDecode) {
  ELLM_REQUIRE_MODEL(path);
  auto engine = Engine::Load(path, {.threads = 2});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  auto ids = Text(**engine, 48);
  auto batched = LastLogits(**engine, ids, 256, false);
  auto single = LastLogits(**engine, ids, 256, true);
  ASSERT_EQ(batched.size(), single.size());
  // Same kernels row by row: only float summation order in attention may differ.
  EXPECT_LT(MaxAbsDiff(batched, single), 1e-3);
}

TEST(Gemma3Consistency, MicroBatchSizeDoesNotChangeLogitsPastTheWindow) {
  ELLM_REQUIRE_MODEL(path);
  auto engine = Engine::Load(path, {.threads = 2});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  // 700 tokens: past the 512-token window, so sliding layers wrap their ring.
  auto ids = Text(**engine, 700);
  auto a = LastLogits(**engine, ids, 64, false);
  auto b = LastLogits(**engine, ids, 700, false);
  EXPECT_LT(MaxAbsDiff(a, b), 1e-3);
  EXPECT_EQ(std::max_element(a.begin(), a.end()) - a.begin(),
            std::max_element(b.begin(), b.end()) - b.begin());
}

TEST(Gemma3Consistency, RejectsContextOverflowAndBadIds) {
  ELLM_REQUIRE_MODEL(path);
  auto engine = Engine::Load(path, {.threads = 2});
  ASSERT_TRUE(engine.ok());
  auto session = (*engine)->NewSession({.n_ctx = 8});
  ASSERT_TRUE(session.ok());
  std::vector<TokenId> nine(9, 2);
  Status s = (*session)->Eval(nine, LogitsFor::kNone, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*session)->position(), 0);
  std::vector<TokenId> bad = {2, 1 << 30};
  EXPECT_EQ((*session)->Eval(bad, LogitsFor::kNone, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE((*engine)->NewSession({.n_ctx = 1 << 20}).ok());  // past the training context
}

}  // namespace
}  // namespace ellm
