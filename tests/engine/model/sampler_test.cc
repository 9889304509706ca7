#include "ellm/engine/sampler.h"

#include <gtest/gtest.h>

#include <map>

namespace ellm {
namespace {

TEST(Sampler, GreedyPicksArgMaxLowestIndexOnTies) {
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f};
  Sampler s({.temperature = 0.0f});
  EXPECT_EQ(s.Sample(logits), 1);
  EXPECT_EQ(ArgMax(logits), 1);
}

TEST(Sampler, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = static_cast<float>(i % 7) * 0.3f;
  auto run = [&](uint64_t seed) {
    Sampler s({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = seed});
    std::vector<TokenId> out;
    for (int i = 0; i < 40; ++i) out.push_back(s.Sample(logits));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, TopKOneIsGreedyAndFiltersBound) {
  std::vector<float> logits = {1.0f, 5.0f, 4.9f, 0.0f};
  Sampler k1({.temperature = 2.0f, .top_k = 1, .seed = 1});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(k1.Sample(logits), 1);
  // min_p = 0.5 keeps tokens with p >= 0.5 * p_max: only 1 and 2 here.
  Sampler mp({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.5f, .seed = 3});
  std::map<TokenId, int> seen;
  for (int i = 0; i < 200; ++i) ++seen[mp.Sample(logits)];
  EXPECT_EQ(seen.count(0) + seen.count(3), 0u);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
}

TEST(Sampler, RepetitionPenaltyDemotesRecentTokens) {
  std::vector<float> logits = {2.0f, 1.9f};
  Sampler s({.temperature = 0.0f, .repeat_penalty = 1.5f});
  EXPECT_EQ(s.Sample(logits), 0);
  s.Accept(0);
  EXPECT_EQ(s.Sample(logits), 1);  // 2.0 / 1.5 < 1.9
}

}  // namespace
}  // namespace ellm
