// Issue 39: a 64K-token context spills its KV cache to disk with the same
// result as one held in memory. A tiny Qwen 2 with YaRN (trained context
// 131072; the qwen2-yarn recipe of tests/reference/families/, 2 layers of
// width 64, the real Qwen 2 vocabulary) scores one 65,536-token chunk of
// text with and without a 4 MiB KV budget (of the ~16 MiB the cache
// holds): the perplexities are identical, bit for bit. Minutes on 2 cores
// (65K logits of 152K rows, attention over 64K keys): nightly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ellm/engine/engine.h"
#include "ellm/engine/perplexity.h"
#include "family_model_builder.h"
#include "test_env.h"

namespace ellm {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kCtx = 65536;

// Text of at least `tokens` tokens: the repository's own Markdown, repeated
// (what it says does not matter; only that both runs score the same ids).
std::string LongText(const Engine& engine, int64_t tokens) {
  std::string docs;
  for (const char* name : {"README.md", "docs/engine.md", "docs/architecture.md"}) {
    std::ifstream in(testing::SourceDir() + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    docs += ss.str();
  }
  std::string text;
  while (!docs.empty() &&
         static_cast<int64_t>(engine.tokenizer().Encode(text, false, false).size()) < tokens) {
    text += docs;
  }
  return text;
}

TEST(LongSpill, PerplexityAt64KIsIdenticalWithAndWithoutSpill) {
  ELLM_REQUIRE_VOCABS(shared);
  const std::string dir = testing::MakeTempDir("long_spill");
  std::ifstream recipe_in(testing::SourceDir() + "/tests/reference/families/qwen2-yarn.json");
  ASSERT_TRUE(recipe_in) << "missing tests/reference/families/qwen2-yarn.json";
  const nlohmann::json recipe = nlohmann::json::parse(recipe_in);
  const std::string model = dir + "/qwen2-yarn.gguf";
  const testing::BuiltFamilyModel built =
      testing::BuildFamilyModel(recipe, shared + "/" + recipe["vocab"].get<std::string>(), model);
  ASSERT_TRUE(built.error.empty()) << built.error;
  auto engine = Engine::Load(model, {.threads = 2});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_GE((*engine)->info().n_ctx_train, kCtx);
  const std::string text = LongText(**engine, kCtx);
  ASSERT_FALSE(text.empty());

  auto run = [&](uint64_t budget) {
    PerplexityOptions o;
    o.ctx = kCtx;
    o.max_chunks = 1;
    o.session.kv_type = KvType::kBF16;
    o.session.kv_memory_budget = budget;
    o.session.spill_dir = dir;
    auto r = ComputePerplexity(**engine, text, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PerplexityResult{};
  };
  const PerplexityResult plain = run(0);
  const PerplexityResult spilled = run(4ull << 20);
  std::printf("ppl %.6f over %lld tokens; spilled %llu bytes, peak resident %llu (plain %llu)\n",
              plain.ppl, static_cast<long long>(plain.tokens),
              static_cast<unsigned long long>(spilled.kv.spilled_bytes),
              static_cast<unsigned long long>(spilled.kv.peak_resident_bytes),
              static_cast<unsigned long long>(plain.kv.peak_resident_bytes));
  EXPECT_EQ(plain.chunks, 1);
  EXPECT_EQ(plain.tokens, kCtx - 1);
  EXPECT_EQ(spilled.tokens, plain.tokens);
  EXPECT_EQ(spilled.nll, plain.nll);  // bit for bit, not within a tolerance
  EXPECT_EQ(spilled.chunk_nll, plain.chunk_nll);
  EXPECT_TRUE(std::isfinite(plain.nll));
  EXPECT_EQ(plain.kv.spilled_bytes, 0u);
  EXPECT_GT(spilled.kv.spilled_bytes, 8ull << 20);
  EXPECT_LE(spilled.kv.peak_resident_bytes, 4ull << 20);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm
