// The real model at 8K-32K tokens against llama.cpp: perplexity at ctx 32768
// and needle-in-a-haystack retrieval. References in tests/reference/gemma3-270m/
// (perplexity_long.json, needle.json), made by
// scripts/reference/make_long_context_reference.py. Minutes each on 2 cores,
// so all are labelled nightly (tests/CMakeLists.txt): scripts/test --full.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/perplexity.h"
#include "test_env.h"

namespace ellm {
namespace {

using nlohmann::json;

json ReadRef(const std::string& name) {
  std::ifstream in(ellm::testing::SourceDir() + "/tests/reference/gemma3-270m/" + name);
  EXPECT_TRUE(in) << "missing reference file " << name;
  return in ? json::parse(in) : json::object();
}

std::string ReadSourceFile(const std::string& rel) {
  std::ifstream in(ellm::testing::SourceDir() + "/" + rel, std::ios::binary);
  EXPECT_TRUE(in) << "missing " << rel;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) {
    s.replace(i, from.size(), to);
  }
  return s;
}

std::unique_ptr<Engine> LoadEngine(const std::string& path) {
  auto e = Engine::Load(path, {.threads = 2});
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

// One chunk of 32767 scored tokens with bf16 KV (the exact path) with each
// way of computing its scores (pair dot products, widened keys: whichever
// this CPU does not pick by default is run too), and with the opt-in bf16
// attention weights, against llama.cpp's bf16 cache: mean NLL within 0.01
// nats, i.e. perplexity within 1%.
TEST(LongContext, PerplexityAt32KMatchesLlamaCppWithinOnePercent) {
  ELLM_REQUIRE_MODEL(path);
  json ref = ReadRef("perplexity_long.json");
  ASSERT_TRUE(ref.contains("results"));
  std::string text = ReadSourceFile(ref["file"]);
  auto engine = LoadEngine(path);
  ASSERT_NE(engine, nullptr);
  int checked = 0;
  for (const json& r : ref["results"]) {
    if (r["kv_type"] != "bf16") continue;
    for (auto [bf16_weights, scores] :
         {std::pair{false, AttnScores::kPairs}, std::pair{false, AttnScores::kF32},
          std::pair{true, AttnScores::kAuto}}) {
      PerplexityOptions o{.ctx = r["ctx"], .micro_batch = 512, .max_chunks = 1};
      o.session.kv_type = KvType::kBF16;
      o.session.bf16_attention_weights = bf16_weights;
      o.session.attn_scores = scores;
      auto ours = ComputePerplexity(*engine, text, o);
      ASSERT_TRUE(ours.ok()) << ours.status().ToString();
      const double want = r["nll"];
      std::printf("ctx %lld bf16, %s scores%s: nll ours %.5f llama.cpp %.5f (ppl %.4f vs %.4f)\n",
                  static_cast<long long>(o.ctx),
                  std::string(AttnScoresName(ResolveAttnScores(scores))).c_str(),
                  bf16_weights ? ", bf16 weights" : "", ours->nll, want, std::exp(ours->nll),
                  std::exp(want));
      EXPECT_EQ(ours->tokens, r["tokens"].get<int64_t>());
      EXPECT_NEAR(ours->nll, want, 0.01);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);
}

// Both products on AMX bf16 tiles (AttnScores::kTiles): perplexity of the
// same 32767 tokens within 0.1% of the f32 path (keys widened to f32, f32
// weights), and within 1% of llama.cpp's. Runs where the CPU has AMX-BF16
// (the kernels' bits are tested everywhere, on our model of the tiles:
// attn_tile_amx_test).
TEST(LongContext, TilePerplexityAt32KWithinATenthPercentOfF32) {
  if (HostCpu().Level() < IsaLevel::kAmx || !HostCpu().amx_bf16) {
    GTEST_SKIP() << "no AMX-BF16 here: " << HostCpu().ToString();
  }
  ELLM_REQUIRE_MODEL(path);
  json ref = ReadRef("perplexity_long.json");
  ASSERT_TRUE(ref.contains("results"));
  std::string text = ReadSourceFile(ref["file"]);
  auto engine = LoadEngine(path);
  ASSERT_NE(engine, nullptr);
  int checked = 0;
  for (const json& r : ref["results"]) {
    if (r["kv_type"] != "bf16") continue;
    double nll[2] = {};
    for (int i = 0; i < 2; ++i) {
      PerplexityOptions o{.ctx = r["ctx"], .micro_batch = 512, .max_chunks = 1};
      o.session.kv_type = KvType::kBF16;
      o.session.attn_scores = i == 0 ? AttnScores::kF32 : AttnScores::kTiles;
      auto ours = ComputePerplexity(*engine, text, o);
      ASSERT_TRUE(ours.ok()) << ours.status().ToString();
      nll[i] = ours->nll;
    }
    const double want = r["nll"];
    std::printf("ctx %lld bf16: ppl f32 %.4f tiles %.4f (ratio %.5f) llama.cpp %.4f\n",
                static_cast<long long>(r["ctx"].get<int64_t>()), std::exp(nll[0]), std::exp(nll[1]),
                std::exp(nll[1] - nll[0]), std::exp(want));
    EXPECT_NEAR(std::exp(nll[1] - nll[0]), 1.0, 0.001);
    EXPECT_NEAR(nll[1], want, 0.01);
    ++checked;
  }
  EXPECT_EQ(checked, 1);
}

// Greedy answer to the needle question: tokens until end of generation or
// `max_tokens`, decoded.
std::string GreedyAnswer(Engine& engine, const std::vector<TokenId>& prompt, int64_t n_ctx,
                         int max_tokens, const SparseAttentionOptions& sparse) {
  auto session = engine.NewSession(
      {.n_ctx = n_ctx, .micro_batch = 512, .kv_type = KvType::kBF16, .sparse_attention = sparse});
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  std::vector<float> logits;
  auto keep = [&](int64_t, std::span<const float> l) { logits.assign(l.begin(), l.end()); };
  Status s = (*session)->Eval(prompt, LogitsFor::kLast, keep);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<TokenId> answer;
  for (int i = 0; i < max_tokens && s.ok(); ++i) {
    TokenId t =
        static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (engine.tokenizer().IsEndOfGeneration(t)) break;
    answer.push_back(t);
    s = (*session)->Eval(std::span<const TokenId>(&t, 1), LogitsFor::kLast, keep);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return engine.tokenizer().Decode(answer);
}

// Every case of `length` tokens that llama.cpp answers correctly, we answer
// correctly too, from a prompt tokenized to the same length.
void CheckNeedles(const std::string& path, int length, const SparseAttentionOptions& sparse = {}) {
  json ref = ReadRef("needle.json");
  ASSERT_TRUE(ref.contains("cases"));
  std::string text = ReadSourceFile(ref["file"]);
  auto engine = LoadEngine(path);
  ASSERT_NE(engine, nullptr);
  int checked = 0, ours_passed = 0;
  int cases = 0;
  for (const json& c : ref["cases"]) {
    if (c["length"] != length) continue;
    ++cases;
    const std::string number = std::to_string(c["number"].get<int>());
    const size_t cut = c["cut_bytes"], offset = c["offset_bytes"];
    ASSERT_LE(offset, cut);
    ASSERT_LE(cut, text.size());
    std::string prompt = ref["prefix"].get<std::string>() + text.substr(0, offset) +
                         ReplaceAll(ref["needle"], "{n}", number) +
                         text.substr(offset, cut - offset) + ref["suffix"].get<std::string>();
    std::vector<TokenId> ids = engine->tokenizer().Encode(prompt, true, true);
    EXPECT_EQ(static_cast<int64_t>(ids.size()), c["prompt_tokens"].get<int64_t>());
    if (!c["passed"].get<bool>()) {
      std::printf("length %d depth %.1f: llama.cpp missed it (%s), not run\n",
                  c["length"].get<int>(), c["depth"].get<double>(), c["answer"].dump().c_str());
      continue;
    }
    std::string answer = GreedyAnswer(*engine, ids, c["length"], ref["max_answer_tokens"], sparse);
    const bool found = answer.find(number) != std::string::npos;
    std::printf("length %d depth %.1f: ours '%s', llama.cpp %s\n", c["length"].get<int>(),
                c["depth"].get<double>(), answer.c_str(), c["answer"].dump().c_str());
    EXPECT_TRUE(found) << "length " << c["length"] << " depth " << c["depth"] << ": answered '"
                       << answer << "', llama.cpp answered " << c["answer"];
    ++checked;
    ours_passed += found;
  }
  std::printf("length %d%s: %d cases, llama.cpp passes %d, we pass %d of those\n", length,
              sparse.top_k_blocks > 0 ? " (sparse attention)" : "", cases, checked, ours_passed);
  EXPECT_EQ(cases, 3);
}

TEST(LongContext, NeedleAt8KFoundWhereLlamaCppFindsIt) {
  ELLM_REQUIRE_MODEL(path);
  CheckNeedles(path, 8192);
}
TEST(LongContext, NeedleAt16KFoundWhereLlamaCppFindsIt) {
  ELLM_REQUIRE_MODEL(path);
  CheckNeedles(path, 16384);
}
TEST(LongContext, NeedleAt32KFoundWhereLlamaCppFindsIt) {
  ELLM_REQUIRE_MODEL(path);
  CheckNeedles(path, 32768);
}

// The opt-in sparse attention, as docs/benchmarks.md reports it.
constexpr SparseAttentionOptions kSparse{
    .top_k_blocks = 128, .sink_tokens = 64, .local_tokens = 1024};

TEST(LongContext, SparsePerplexityAt32KWithinOnePercentOfExact) {
  ELLM_REQUIRE_MODEL(path);
  json ref = ReadRef("perplexity_long.json");
  std::string text = ReadSourceFile(ref["file"]);
  auto engine = LoadEngine(path);
  ASSERT_NE(engine, nullptr);
  double nll[2] = {};
  for (int sparse : {0, 1}) {
    PerplexityOptions o{.ctx = 32768, .micro_batch = 512, .max_chunks = 1};
    o.session.kv_type = KvType::kBF16;
    if (sparse) o.session.sparse_attention = kSparse;
    auto r = ComputePerplexity(*engine, text, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    nll[sparse] = r->nll;
  }
  std::printf("ctx 32768 bf16: ppl exact %.4f, sparse (top %d blocks) %.4f (%+.2f%%)\n",
              std::exp(nll[0]), kSparse.top_k_blocks, std::exp(nll[1]),
              100 * (std::exp(nll[1] - nll[0]) - 1));
  EXPECT_NE(nll[0], nll[1]);  // blocks were skipped
  EXPECT_NEAR(nll[1], nll[0], 0.01);
}

TEST(LongContext, SparseNeedlesFoundWhereLlamaCppFindsThem) {
  ELLM_REQUIRE_MODEL(path);
  for (int length : {8192, 16384, 32768}) CheckNeedles(path, length, kSparse);
}

}  // namespace
}  // namespace ellm
