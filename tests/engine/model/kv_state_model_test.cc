// The KV cache's memory features on the real model: a small budget spills
// and changes nothing; saved prefixes restore exactly and refuse anything
// that is not theirs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ellm/engine/engine.h"
#include "test_env.h"

namespace ellm {
namespace {

namespace fs = std::filesystem;

std::vector<TokenId> Text(Engine& e, int n) {
  std::string s;
  int i = 0;
  while (static_cast<int>(e.tokenizer().Encode(s, true, false).size()) < n) {
    s += "Clause " + std::to_string(++i) +
         ": the supplier shall deliver 40 units per month at 12.50 EUR each, invoiced on the "
         "first business day; late delivery costs 2% per week. ";
  }
  auto ids = e.tokenizer().Encode(s, true, false);
  ids.resize(static_cast<size_t>(n));
  return ids;
}

struct Dir {
  Dir() : path(fs::temp_directory_path() / ("ellm-kvstate-" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  fs::path path;
};

class KvStateModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string path = ellm::testing::ModelPath();
    if (path.empty()) return;
    auto e = Engine::Load(path, {.threads = 2});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value().release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  static std::vector<float> Eval(Session& s, std::span<const TokenId> ids) {
    std::vector<float> out;
    Status st = s.Eval(ids, LogitsFor::kLast,
                       [&](int64_t, std::span<const float> l) { out.assign(l.begin(), l.end()); });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }
  static Engine* engine_;
};
Engine* KvStateModel::engine_ = nullptr;

TEST_F(KvStateModel, SmallBudgetSpillsAndGivesBitIdenticalLogits) {
  ELLM_REQUIRE_MODEL(path);
  const auto ids = Text(*engine_, 3000);
  auto plain = engine_->NewSession({.n_ctx = 4096, .kv_type = KvType::kBF16});
  ASSERT_TRUE(plain.ok());
  const auto want = Eval(**plain, ids);
  // Raw spills (the default), zstd ones, and raw ones read in place.
  for (auto [level, map] : {std::pair{0, false}, std::pair{1, false}, std::pair{0, true}}) {
    SCOPED_TRACE("zstd level " + std::to_string(level) + (map ? ", mapped" : ""));
    Dir dir;
    // Sliding windows (15 layers x 4 blocks x 256 KiB) + 3 full-attention
    // blocks + 4 staging blocks = 16.75 MiB; the full layers need 9 MiB more.
    const uint64_t budget = 18ull << 20;
    auto spilled = engine_->NewSession({.n_ctx = 4096,
                                        .kv_type = KvType::kBF16,
                                        .kv_memory_budget = budget,
                                        .spill_dir = dir.path.string(),
                                        .spill_zstd_level = level,
                                        .kv_spill_map = map});
    ASSERT_TRUE(spilled.ok()) << spilled.status().ToString();
    const auto got = Eval(**spilled, ids);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
    const KvStats st = (*spilled)->kv_stats();
    std::printf("spilled %llu bytes (ratio %.3f), read back %llu, peak resident %llu of %llu\n",
                static_cast<unsigned long long>(st.spilled_bytes), st.compression_ratio(),
                static_cast<unsigned long long>(st.read_back_bytes),
                static_cast<unsigned long long>(st.peak_resident_bytes),
                static_cast<unsigned long long>(budget));
    EXPECT_GT(st.spilled_bytes, 4ull << 20);
    EXPECT_LE(st.peak_resident_bytes, budget);
    EXPECT_EQ(st.compression_ratio() > 1.0, level > 0);
    EXPECT_GT((*plain)->kv_stats().peak_resident_bytes, budget);
  }
}

// With sparse attention the block bounds follow a restored state: a session
// that held another text before the restore continues exactly as the one
// that saved it.
TEST_F(KvStateModel, SparseSessionContinuesARestoredPrefixExactly) {
  ELLM_REQUIRE_MODEL(path);
  const auto ids = Text(*engine_, 1400);
  const std::span<const TokenId> all(ids);
  const auto prefix = all.first(1100), rest = all.subspan(1100);
  // 14 middle blocks before position 1100, 2 kept.
  const SessionOptions o{
      .n_ctx = 2048,
      .sparse_attention = {.top_k_blocks = 2, .sink_tokens = 64, .local_tokens = 128}};
  Dir dir;
  const std::string state = (dir.path / "prefix.kvs").string();
  auto a = engine_->NewSession(o);
  ASSERT_TRUE(a.ok());
  Eval(**a, prefix);
  ASSERT_TRUE((*a)->SaveState(state).ok());
  const auto want = Eval(**a, rest);

  auto b = engine_->NewSession(o);
  ASSERT_TRUE(b.ok());
  std::vector<TokenId> other(ids.begin(), ids.begin() + 1100);
  std::reverse(other.begin() + 1, other.end());
  Eval(**b, other);
  auto n = (*b)->RestoreState(state, all);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1100);
  const auto got = Eval(**b, rest);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

TEST_F(KvStateModel, RestoredPrefixContinuesExactlyAndRefusesOthers) {
  ELLM_REQUIRE_MODEL(path);
  const auto ids = Text(*engine_, 1400);
  const std::span<const TokenId> all(ids);
  const auto prefix = all.first(1100), rest = all.subspan(1100);
  Dir dir;
  const std::string state = (dir.path / "prefix.kvs").string();
  auto a = engine_->NewSession({.n_ctx = 2048});
  ASSERT_TRUE(a.ok());
  Eval(**a, prefix);
  ASSERT_TRUE((*a)->SaveState(state).ok());
  const auto want = Eval(**a, rest);

  auto b = engine_->NewSession({.n_ctx = 2048});
  ASSERT_TRUE(b.ok());
  auto n = (*b)->RestoreState(state, all);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1100);
  EXPECT_EQ((*b)->position(), 1100);
  const auto got = Eval(**b, rest);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);

  // A different prefix.
  std::vector<TokenId> other(ids.begin(), ids.end());
  other[500] = other[500] == 100 ? 101 : 100;
  auto mismatch = (*b)->RestoreState(state, other);
  EXPECT_EQ(mismatch.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(mismatch.status().message().find("token 500"), std::string::npos)
      << mismatch.status().ToString();
  EXPECT_EQ((*b)->position(), 0);
  // Another KV type.
  auto f32 = engine_->NewSession({.n_ctx = 2048, .kv_type = KvType::kF32});
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ((*f32)->RestoreState(state, all).status().code(), StatusCode::kFailedPrecondition);

  // Another model (its fingerprint) and another format version.
  std::string bytes;
  {
    std::ifstream in(state, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto rewrite = [&](size_t at, char c) {
    std::string copy = bytes;
    copy[at] = c;
    std::ofstream(state, std::ios::binary | std::ios::trunc) << copy;
  };
  // Header: magic (8), version (4), 7 x u32, then the fingerprint's bytes.
  rewrite(40, bytes[40] == 'f' ? 'e' : 'f');
  auto model = (*b)->RestoreState(state, all);
  EXPECT_NE(model.status().message().find("another model"), std::string::npos)
      << model.status().ToString();
  rewrite(8, 9);
  auto version = (*b)->RestoreState(state, all);
  EXPECT_NE(version.status().message().find("format version 9"), std::string::npos)
      << version.status().ToString();
  // Truncated.
  std::ofstream(state, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  EXPECT_EQ((*b)->RestoreState(state, all).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ellm

namespace ellm {
namespace {

// The 32K case the budget exists for: resident KV stays within a budget
// far below what the run needs, measured by the cache itself.
TEST_F(KvStateModel, ThirtyTwoKPrefillStaysWithinTheBudget) {
  ELLM_REQUIRE_MODEL(path);
  std::vector<TokenId> ids = Text(*engine_, 2000);
  while (ids.size() < 32000) ids.insert(ids.end(), ids.begin() + 1, ids.begin() + 2000);
  ids.resize(32000);
  Dir dir;
  const uint64_t budget = 24ull << 20;  // of ~110 MiB the run holds in memory
  auto s = engine_->NewSession({.n_ctx = 32768,
                                .micro_batch = 512,
                                .kv_memory_budget = budget,
                                .spill_dir = dir.path.string()});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  TokenId next = -1;
  Status st = (*s)->Eval(ids, LogitsFor::kLast, [&](int64_t, std::span<const float> l) {
    next = static_cast<TokenId>(std::max_element(l.begin(), l.end()) - l.begin());
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_GE(next, 0);
  const KvStats k = (*s)->kv_stats();
  std::printf("32K: spilled %llu MiB (ratio %.2f), peak resident %llu of %llu MiB\n",
              static_cast<unsigned long long>(k.spilled_bytes >> 20), k.compression_ratio(),
              static_cast<unsigned long long>(k.peak_resident_bytes >> 20),
              static_cast<unsigned long long>(budget >> 20));
  EXPECT_LE(k.peak_resident_bytes, budget);
  EXPECT_GT(k.spilled_bytes, 80ull << 20);
}

}  // namespace
}  // namespace ellm
