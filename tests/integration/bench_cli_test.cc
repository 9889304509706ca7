// `ellm bench --json` is a contract that acceptance checks read (issue #4):
// one JSON object with at least prefill_tokens_per_s, decode_tokens_per_s and
// peak_rss_bytes. These tests check its form and that it reports what ran,
// never its speed (speed is for benchmarks, not tests).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ellm/engine/cpu_features.h"
#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

// The last line of `output` as JSON (stderr's log lines may come first).
nlohmann::json LastLineJson(const std::string& output) {
  std::string s = output;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const size_t nl = s.rfind('\n');
  return nlohmann::json::parse(nl == std::string::npos ? s : s.substr(nl + 1));
}

TEST(BenchCli, JsonCarriesTheContractKeys) {
  ELLM_REQUIRE_MODEL(model);
  std::string out;
  ASSERT_EQ(RunCli("bench --model '" + model + "' --depth 300 --gen 4 --threads 2 --json", &out), 0)
      << out;
  const nlohmann::json j = LastLineJson(out);
  EXPECT_EQ(j.at("depth"), 300);
  EXPECT_EQ(j.at("gen"), 4);
  EXPECT_EQ(j.at("threads"), 2);
  EXPECT_GT(j.at("prefill_tokens_per_s").get<double>(), 0.0);
  EXPECT_GT(j.at("decode_tokens_per_s").get<double>(), 0.0);
  // The mapped model alone is ~240 MB; a few GB would be a leak.
  EXPECT_GT(j.at("peak_rss_bytes").get<uint64_t>(), uint64_t{100} << 20);
  EXPECT_LT(j.at("peak_rss_bytes").get<uint64_t>(), uint64_t{4} << 30);
  EXPECT_EQ(j.at("kv_type"), "bf16");      // the default
  EXPECT_EQ(j.at("sparse_attention"), 0);  // off by default
  EXPECT_EQ(j.at("kv_spilled_bytes"), 0);
  EXPECT_TRUE(j.contains("isa")) << j.dump();
}

// ELLM_ISA caps the kernels' level, and the report says which level ran.
TEST(BenchCli, ReportsTheKernelLevelItRan) {
  ELLM_REQUIRE_MODEL(model);
  setenv("ELLM_ISA", "scalar", 1);
  std::string out;
  const int rc = RunCli(
      "bench --model '" + model + "' --depth 8 --gen 1 --threads 2 --kv-type q8_0 --json", &out);
  unsetenv("ELLM_ISA");
  ASSERT_EQ(rc, 0) << out;
  const nlohmann::json j = LastLineJson(out);
  EXPECT_EQ(j.at("isa"), "scalar");
  EXPECT_EQ(j.at("kv_type"), "q8_0");
  EXPECT_EQ(j.at("attn_weights"), "f32");
  EXPECT_EQ(j.at("attn_scores"), "f32");  // only a bf16 cache has a choice
}

// A bf16 cache's scores: auto reports what this CPU resolves it to (f32
// when capped below AVX-512), a named choice is kept, anything else refused.
TEST(BenchCli, AttnScoresReportWhatRan) {
  ELLM_REQUIRE_MODEL(model);
  const std::string base = "bench --model '" + model + "' --depth 70 --gen 2 --threads 2 --json";
  std::string out;
  ASSERT_EQ(RunCli(base, &out), 0) << out;
  EXPECT_EQ(LastLineJson(out).at("attn_scores"), HostCpu().FastBf16Dot() ? "pairs" : "f32");
  for (const char* s : {"pairs", "f32"}) {
    out.clear();
    ASSERT_EQ(RunCli(base + " --attn-scores " + s, &out), 0) << out;
    const nlohmann::json j = LastLineJson(out);
    EXPECT_EQ(j.at("attn_scores"), s);
    EXPECT_EQ(j.at("kv_type"), "bf16");
    EXPECT_GT(j.at("decode_tokens_per_s").get<double>(), 0.0);
  }
  setenv("ELLM_ISA", "avx2", 1);
  out.clear();
  const int rc = RunCli(base, &out);
  unsetenv("ELLM_ISA");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(LastLineJson(out).at("attn_scores"), "f32");
  out.clear();
  EXPECT_NE(RunCli(base + " --attn-scores bf16", &out), 0) << out;
  EXPECT_NE(out.find("auto, pairs, f32 or tiles"), std::string::npos) << out;
  // AMX tiles: both products on tiles (bf16 weights) where the CPU has
  // AMX-BF16, refused with the reason elsewhere.
  out.clear();
  const int tiles = RunCli(base + " --attn-scores tiles", &out);
  if (HostCpu().Level() >= IsaLevel::kAmx && HostCpu().amx_bf16) {
    ASSERT_EQ(tiles, 0) << out;
    const nlohmann::json j = LastLineJson(out);
    EXPECT_EQ(j.at("attn_scores"), "tiles");
    EXPECT_EQ(j.at("attn_weights"), "bf16");
  } else {
    EXPECT_EQ(tiles, 2) << out;
    EXPECT_NE(out.find("need AMX-BF16"), std::string::npos) << out;
  }
}

// The opt-in bf16 attention weights run with the bf16 cache and are refused,
// with the reason, with any other.
TEST(BenchCli, Bf16AttentionWeightsNeedTheBf16Cache) {
  ELLM_REQUIRE_MODEL(model);
  std::string out;
  ASSERT_EQ(RunCli("bench --model '" + model +
                       "' --depth 70 --gen 2 --threads 2 --kv-type bf16 --attn-weights bf16 --json",
                   &out),
            0)
      << out;
  const nlohmann::json j = LastLineJson(out);
  EXPECT_EQ(j.at("kv_type"), "bf16");
  EXPECT_EQ(j.at("attn_weights"), "bf16");
  EXPECT_GT(j.at("decode_tokens_per_s").get<double>(), 0.0);
  out.clear();
  EXPECT_NE(RunCli("bench --model '" + model +
                       "' --depth 8 --gen 1 --kv-type f16 --attn-weights bf16 --json",
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("need the bf16 KV cache"), std::string::npos) << out;
}

// Sparse attention is reported with its settings; at depth 600 with one
// middle block kept out of seven, it runs (and is refused out of range
// before the model loads).
TEST(BenchCli, SparseAttentionSettingsAreReported) {
  ELLM_REQUIRE_MODEL(model);
  std::string out;
  ASSERT_EQ(RunCli("bench --model '" + model +
                       "' --depth 600 --gen 2 --threads 2 --sparse-attn 1 --sparse-local 64 --json",
                   &out),
            0)
      << out;
  const nlohmann::json j = LastLineJson(out);
  EXPECT_EQ(j.at("sparse_attention"), 1);
  EXPECT_EQ(j.at("sparse_sink_tokens"), 64);
  EXPECT_EQ(j.at("sparse_local_tokens"), 64);
  EXPECT_GT(j.at("decode_tokens_per_s").get<double>(), 0.0);
  out.clear();
  EXPECT_EQ(
      RunCli("bench --model /nonexistent/model.gguf --depth 8 --gen 1 --sparse-attn -1", &out), 2)
      << out;
  EXPECT_NE(out.find("--sparse-attn must be in [0, 16777216]"), std::string::npos) << out;
}

// A bad KV flag is refused before the model is opened: the model path here
// does not exist, and the error names the flag's value, not the file.
TEST(BenchCli, UnknownKvTypeIsRefusedBeforeTheModelLoads) {
  std::string out;
  EXPECT_EQ(RunCli("bench --model /nonexistent/model.gguf --depth 8 --gen 1 --kv-type q4_9", &out),
            2)
      << out;
  EXPECT_NE(out.find("unknown KV type 'q4_9'"), std::string::npos) << out;
  EXPECT_NE(out.find("f16, bf16, f32 or q8_0"), std::string::npos) << out;
  EXPECT_EQ(out.find("nonexistent"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(
      RunCli("bench --model /nonexistent/model.gguf --depth 8 --gen 1 --attn-weights f8", &out), 2)
      << out;
  EXPECT_NE(out.find("--attn-weights 'f8': expected f32 or bf16"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunCli("perplexity --model /nonexistent/model.gguf --file /nonexistent/t.txt --ctx 64 "
                   "--kv-type q4_9",
                   &out),
            2)
      << out;
  EXPECT_NE(out.find("unknown KV type 'q4_9'"), std::string::npos) << out;
}

TEST(BenchCli, OutOfRangeSpillLevelAndStreamsAreRefusedBeforeTheModelLoads) {
  for (const char* level : {"-1", "20"}) {
    std::string out;
    EXPECT_EQ(RunCli(std::string("bench --model /nonexistent/model.gguf --depth 8 --gen 1 "
                                 "--spill-level ") +
                         level,
                     &out),
              2)
        << out;
    EXPECT_NE(out.find("--spill-level must be 0 (raw) or a zstd level 1..19"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("nonexistent"), std::string::npos) << out;
  }
  {
    std::string out;
    EXPECT_EQ(
        RunCli("bench --model /nonexistent/model.gguf --depth 8 --gen 1 --spill-read mmap", &out),
        2)
        << out;
    EXPECT_NE(out.find("--spill-read 'mmap': expected copy or map"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(RunCli("bench --model /nonexistent/model.gguf --depth 8 --gen 1 --kv-budget 64 "
                     "--spill-read map --spill-level 3",
                     &out),
              2)
        << out;
    EXPECT_NE(out.find("need raw spill blocks"), std::string::npos) << out;
  }
  for (const char* streams : {"0", "257"}) {
    std::string out;
    EXPECT_EQ(RunCli(std::string("bench --model /nonexistent/model.gguf --depth 8 --gen 1 "
                                 "--streams ") +
                         streams,
                     &out),
              2)
        << out;
    EXPECT_NE(out.find("--streams must be 1..256"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace ellm::testing
