// The block KV cache under a memory budget: spilled blocks come back bit
// for bit, the budget holds, and disk trouble fails cleanly.
#include "kv/kv_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "ellm/engine/thread_pool.h"
#include "kv/kv_state_file.h"
#include "model/attention.h"

namespace ellm::kv {
namespace {

namespace fs = std::filesystem;

constexpr int kHeads = 4, kKvHeads = 2, kDim = 64;

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() /
           ("ellm-kv-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
  static inline int counter = 0;
};

KvCacheOptions Options(int64_t n_ctx, KvType type) {
  KvCacheOptions o;
  o.n_head_kv = kKvHeads;
  o.head_dim_k = kDim;
  o.head_dim_v = kDim;
  o.windows = {0, 100, 0};  // two full-attention layers around a sliding one
  o.n_ctx = n_ctx;
  o.micro_batch = 64;
  o.type = type;
  return o;
}

uint64_t BlockBytes(const KvCache& c) { return c.slice_bytes() * kKvHeads; }

// Positions [from, to) in micro-batches of 64 from `from`: the K/V of each
// (layer, position) and the queries of each (layer, micro-batch) come from
// seeds of their own and `salt` (minstd: cheap to seed), so a run can be
// repeated piecewise.
StatusOr<std::vector<float>> RunRange(KvCache& cache, int64_t from, int64_t to, int salt) {
  std::normal_distribution<float> nd(0, 1);
  ThreadPool pool({.threads = 2});
  model::AttentionScratch scratch;
  std::vector<float> all;
  std::vector<float> k(kKvHeads * kDim), v(kKvHeads * kDim);
  for (int64_t pos0 = from; pos0 < to; pos0 += 64) {
    const int64_t m = std::min<int64_t>(64, to - pos0);
    for (int il = 0; il < cache.n_layer(); ++il) {
      for (int64_t t = pos0; t < pos0 + m; ++t) {
        std::minstd_rand rng(static_cast<uint32_t>(salt * 7919 + il * 100003 + t + 1));
        for (float& x : k) x = nd(rng);
        for (float& x : v) x = nd(rng);
        ELLM_RETURN_IF_ERROR(cache.Store(il, t, k.data(), v.data()));
      }
      std::minstd_rand rng(static_cast<uint32_t>(salt * 7919 + il * 100003 + pos0 + 50000000));
      std::vector<float> q(m * kHeads * kDim), out(m * kHeads * kDim);
      for (float& x : q) x = nd(rng) * 0.3f;
      const int window = cache.options().windows[il];
      ELLM_RETURN_IF_ERROR(model::Attention({kHeads, kKvHeads, kDim, kDim, window}, cache, il,
                                            q.data(), m, pos0, out.data(), pool, scratch));
      all.insert(all.end(), out.begin(), out.end());
    }
  }
  return all;
}

// Every position from 0, and attention on every layer: all outputs.
StatusOr<std::vector<float>> RunAll(KvCache& cache, int64_t n) { return RunRange(cache, 0, n, 0); }

// A sequence truncated back to a prefix and continued attends exactly as
// one that never left it, with and without spilling (the prefix ends inside
// a block, and a spilled one); once the sliding layer's ring has moved past
// the window the prefix needs, truncation is refused and changes nothing.
TEST(KvCache, TruncatedAndContinuedEqualsAStraightRun) {
  const int64_t n = 2000, prefix = 700;
  for (int mode : {0, 1, 2}) {
    const bool spill = mode > 0;
    SCOPED_TRACE(mode == 0 ? "in memory" : mode == 1 ? "spilled, copied back" : "spilled, mapped");
    TempDir dir;
    KvCacheOptions o = Options(n, KvType::kBF16);
    o.map_spill = mode == 2;
    if (spill) {
      auto probe = KvCache::Create(o);
      ASSERT_TRUE(probe.ok());
      o.spill_dir = dir.path;
      o.memory_budget = (2 + 2 + KvCache::StagingBlocks(o)) * BlockBytes(**probe);
    }
    auto straight = KvCache::Create(o);
    auto cut = KvCache::Create(o);
    ASSERT_TRUE(straight.ok() && cut.ok());
    ASSERT_TRUE(RunRange(**straight, 0, prefix, 0).ok());
    auto want = RunRange(**straight, prefix, n, 0);
    ASSERT_TRUE(want.ok()) << want.status().ToString();

    ASSERT_TRUE(RunRange(**cut, 0, prefix, 0).ok());
    // Another continuation, far enough to fill a new block (and, with the
    // budget, spill the one the prefix ends in) but not past the window.
    ASSERT_TRUE(RunRange(**cut, prefix, 1000, 1).ok());
    ASSERT_TRUE((*cut)->CanTruncate(prefix));
    ASSERT_TRUE((*cut)->Truncate(prefix).ok());
    auto got = RunRange(**cut, prefix, n, 0);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), want->size());
    EXPECT_EQ(std::memcmp(got->data(), want->data(), got->size() * sizeof(float)), 0);
    if (spill) {
      EXPECT_GT((*cut)->stats().spilled_bytes, 0u);
    }

    // The ring now holds positions 1536 on: the window before 700 is gone.
    const std::vector<int64_t> held = (*cut)->HeldBlocks(1);
    EXPECT_FALSE((*cut)->CanTruncate(prefix));
    const Status refused = (*cut)->Truncate(prefix);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
    EXPECT_EQ((*cut)->HeldBlocks(1), held);
    EXPECT_EQ((*cut)->HeldBlocks(0).size(), 8u);
    EXPECT_TRUE((*cut)->CanTruncate(1900));
  }
}

class KvSpill : public ::testing::TestWithParam<KvType> {};

TEST_P(KvSpill, SpilledRunIsBitIdenticalAndStaysWithinBudget) {
  const int64_t n = 2000;
  auto plain = KvCache::Create(Options(n, GetParam()));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto want = RunAll(**plain, n);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ((*plain)->stats().spilled_bytes, 0u);

  // Raw blocks (the default), zstd ones, and raw ones read in place.
  for (auto [level, map] : {std::pair{0, false}, std::pair{1, false}, std::pair{0, true}}) {
    SCOPED_TRACE("zstd level " + std::to_string(level) + (map ? ", mapped" : ""));
    TempDir dir;
    KvCacheOptions o = Options(n, GetParam());
    o.spill_dir = dir.path;
    o.zstd_level = level;
    o.map_spill = map;
    // Ring (2 blocks) + one block per full layer + staging: the minimum.
    o.memory_budget = (2 + 2 + KvCache::StagingBlocks(o)) * BlockBytes(**plain);
    auto spilled = KvCache::Create(o);
    ASSERT_TRUE(spilled.ok()) << spilled.status().ToString();
    auto got = RunAll(**spilled, n);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), want->size());
    EXPECT_EQ(std::memcmp(got->data(), want->data(), got->size() * sizeof(float)), 0);
    const KvStats st = (*spilled)->stats();
    // 2000 positions = 8 blocks per full layer, all but the last spilled.
    EXPECT_EQ(st.spilled_bytes, 2 * 7 * BlockBytes(**plain));
    EXPECT_GT(st.read_back_bytes, st.spilled_bytes);
    EXPECT_LE(st.peak_resident_bytes, o.memory_budget);
    if (level == 0) {
      // Raw: the block, its header and checksum.
      EXPECT_EQ(st.spilled_encoded_bytes, 2 * 7 * RawBlockBytes(BlockBytes(**plain)));
    } else {
      EXPECT_GT(st.compression_ratio(), 1.0);
    }
    if (map) {
      // Nothing to read back into: the minimum budget is 4 blocks.
      EXPECT_EQ(KvCache::StagingBlocks(o), 0);
      EXPECT_EQ(o.memory_budget, 4 * BlockBytes(**plain));
    }
    std::printf("%s level %d%s: spilled %llu bytes, ratio %.3f, peak resident %llu of %llu\n",
                std::string(KvTypeName(GetParam())).c_str(), level, map ? " mapped" : "",
                static_cast<unsigned long long>(st.spilled_bytes), st.compression_ratio(),
                static_cast<unsigned long long>(st.peak_resident_bytes),
                static_cast<unsigned long long>(o.memory_budget));
    // The spill file has no name: nothing is left in the directory.
    EXPECT_TRUE(fs::is_empty(dir.path));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KvSpill,
                         ::testing::Values(KvType::kF16, KvType::kBF16, KvType::kF32,
                                           KvType::kQ8_0));

TEST(KvCache, BudgetBelowTheMinimumSaysHowMuchIsNeeded) {
  TempDir dir;
  KvCacheOptions o = Options(4096, KvType::kF16);
  o.spill_dir = dir.path;
  o.memory_budget = 1 << 19;
  auto c = KvCache::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("is below the"), std::string::npos) << c.status().ToString();
  o.spill_dir.clear();
  o.memory_budget = 1 << 30;
  c = KvCache::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("kv.spill_dir"), std::string::npos);
}

TEST(KvCache, MappedSpillNeedsRawBlocks) {
  TempDir dir;
  KvCacheOptions o = Options(4096, KvType::kBF16);
  o.spill_dir = dir.path;
  o.memory_budget = 64 << 20;
  o.zstd_level = 3;
  o.map_spill = true;
  auto c = KvCache::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("kv.spill_zstd_level 0"), std::string::npos)
      << c.status().ToString();
}

TEST(KvCache, MissingSpillDirectoryIsNamed) {
  KvCacheOptions o = Options(4096, KvType::kF16);
  o.spill_dir = "/nonexistent/ellm-spill";
  o.memory_budget = 1 << 30;
  auto c = KvCache::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/ellm-spill"), std::string::npos)
      << c.status().ToString();
}

TEST(KvCache, CorruptSpilledBlockFailsWithDataLoss) {
  for (int level : {0, 1}) {
    SCOPED_TRACE("zstd level " + std::to_string(level));
    TempDir dir;
    KvCacheOptions o = Options(1000, KvType::kF16);
    o.spill_dir = dir.path;
    o.zstd_level = level;
    auto probe = KvCache::Create(Options(1000, KvType::kF16));
    ASSERT_TRUE(probe.ok());
    o.memory_budget = (2 + 2 + KvCache::StagingBlocks(o)) * BlockBytes(**probe);
    auto c = KvCache::Create(o);
    ASSERT_TRUE(c.ok());
    // 600 positions: blocks 0 and 1 of each full layer get spilled.
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> k(kKvHeads * kDim), v(kKvHeads * kDim);
    for (int64_t p = 0; p < 600; ++p) {
      for (int il = 0; il < 3; ++il) {
        for (float& x : k) x = nd(rng);
        for (float& x : v) x = nd(rng);
        ASSERT_TRUE((*c)->Store(il, p, k.data(), v.data()).ok());
      }
    }
    ASSERT_GT((*c)->stats().spilled_bytes, 0u);
    const int fd = (*c)->spill_file_for_test()->fd_for_test();
    const uint8_t junk[64] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(::pwrite(fd, junk, sizeof(junk), 1000), static_cast<ssize_t>(sizeof(junk)));
    std::vector<KvCache::BlockView> views;
    Status s = (*c)->Acquire(0, 0, 1, &views);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    EXPECT_NE(s.message().find("layer 0"), std::string::npos) << s.ToString();
  }
}

// Several chunks per full layer and two full layers: the I/O thread reads
// each layer's next chunk while the current one is computed, and the next
// layer's first chunk at the end of a layer. Same bits as in memory and as
// without prefetch, the same bytes read back, and the prefetch is used.
TEST(KvCache, PrefetchAcrossChunksAndLayersIsBitIdentical) {
  const int64_t n = 3000;  // 12 blocks per full layer: 3 chunks
  auto plain = KvCache::Create(Options(n, KvType::kBF16));
  ASSERT_TRUE(plain.ok());
  auto want = RunAll(**plain, n);
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  std::vector<KvStats> stats;
  for (bool prefetch : {false, true}) {
    TempDir dir;
    KvCacheOptions o = Options(n, KvType::kBF16);
    o.spill_dir = dir.path;
    o.prefetch = prefetch;
    o.memory_budget = (2 + 2 + KvCache::StagingBlocks(o)) * BlockBytes(**plain);
    auto c = KvCache::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ((*c)->stats().resident_bytes, KvCache::StagingBlocks(o) * BlockBytes(**plain));
    auto got = RunAll(**c, n);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), want->size());
    EXPECT_EQ(std::memcmp(got->data(), want->data(), got->size() * sizeof(float)), 0)
        << "prefetch " << prefetch;
    stats.push_back((*c)->stats());
    EXPECT_LE(stats.back().peak_resident_bytes, o.memory_budget);
    const KvCache::PrefetchStats p = (*c)->prefetch_stats();
    std::printf(
        "prefetch %d: issued %llu, by thread %llu, by caller %llu, wasted %llu, sync %llu\n",
        prefetch, static_cast<unsigned long long>(p.issued),
        static_cast<unsigned long long>(p.by_thread), static_cast<unsigned long long>(p.by_caller),
        static_cast<unsigned long long>(p.wasted), static_cast<unsigned long long>(p.sync));
    const uint64_t blocks_read = stats.back().read_back_bytes / BlockBytes(**plain);
    EXPECT_EQ(p.by_thread + p.by_caller + p.sync, blocks_read);
    if (!prefetch) {
      EXPECT_EQ(p.issued, 0u);
      continue;
    }
    // Only blocks spilled after their chunk was queued are read on demand.
    EXPECT_GT(p.by_thread + p.by_caller, 4 * p.sync);
    EXPECT_LE(p.by_thread + p.by_caller + p.wasted, p.issued);
  }
  EXPECT_EQ(stats[0].read_back_bytes, stats[1].read_back_bytes);
  EXPECT_EQ(stats[0].spilled_bytes, stats[1].spilled_bytes);
}

// Stores n positions of pseudo-random K/V in every layer of c.
void StoreAll(KvCache& c, int64_t n) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> k(kKvHeads * kDim), v(kKvHeads * kDim);
  for (int64_t p = 0; p < n; ++p) {
    for (int il = 0; il < c.n_layer(); ++il) {
      for (float& x : k) x = nd(rng);
      for (float& x : v) x = nd(rng);
      ASSERT_TRUE(c.Store(il, p, k.data(), v.data()).ok());
    }
  }
}

// A block that fails its checksum when the I/O thread decodes it fails the
// Acquire that wanted it with DATA_LOSS; nothing hangs, the cache still
// serves the intact blocks, and Clear and the destructor stop the thread.
TEST(KvCache, CorruptBlockReadByPrefetchFailsWithDataLoss) {
  TempDir dir;
  KvCacheOptions o = Options(2500, KvType::kF16);
  o.spill_dir = dir.path;
  auto probe = KvCache::Create(Options(2500, KvType::kF16));
  ASSERT_TRUE(probe.ok());
  o.memory_budget = (2 + 2 + KvCache::StagingBlocks(o)) * BlockBytes(**probe);
  auto c = KvCache::Create(o);
  ASSERT_TRUE(c.ok());
  StoreAll(**c, 2500);  // 10 blocks per full layer, 0..8 spilled
  // The last block spilled (block 8 of a full layer) is the file's tail.
  const SpillFile* file = (*c)->spill_file_for_test();
  const uint8_t junk[64] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(::pwrite(file->fd_for_test(), junk, sizeof(junk), file->size() - 100),
            static_cast<ssize_t>(sizeof(junk)));
  std::vector<KvCache::BlockView> views;
  Status failed;
  int64_t failed_b0 = -1;
  for (int il : {0, 2}) {
    for (int64_t b0 = 0; b0 < 10 && failed.ok(); b0 += kMaxChunkBlocks) {
      (*c)->WaitForPrefetchForTest();
      failed = (*c)->Acquire(il, b0, std::min<int64_t>(10, b0 + kMaxChunkBlocks), &views);
      if (!failed.ok()) failed_b0 = b0;
    }
  }
  EXPECT_EQ(failed.code(), StatusCode::kDataLoss) << failed.ToString();
  EXPECT_EQ(failed_b0, 8);
  EXPECT_NE(failed.message().find("block 8"), std::string::npos) << failed.ToString();
  EXPECT_NE(failed.message().find("(prefetched)"), std::string::npos) << failed.ToString();
  EXPECT_TRUE(views.empty());
  const KvCache::PrefetchStats p = (*c)->prefetch_stats();
  EXPECT_EQ(p.by_caller, 0u);
  EXPECT_GT(p.by_thread, 0u);
  // The intact blocks still come back, and a prefetch queued now is dropped
  // cleanly by Clear.
  ASSERT_TRUE((*c)->Acquire(0, 0, 4, &views).ok());
  ASSERT_TRUE((*c)->Acquire(0, 4, 8, &views).ok());
  EXPECT_TRUE((*c)->Clear().ok());
}

// A full disk (simulated by a file-size limit) fails the store that needed
// to spill with RESOURCE_EXHAUSTED naming the directory; nothing crashes.
TEST(KvCache, FullDiskFailsTheStoreCleanly) {
  TempDir dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    KvCacheOptions o = Options(4000, KvType::kF32);
    o.spill_dir = dir.path;
    auto probe = KvCache::Create(Options(4000, KvType::kF32));
    o.memory_budget = (2 + 2 + KvCache::StagingBlocks(o)) * BlockBytes(**probe);
    auto c = KvCache::Create(o);
    if (!c.ok()) ::_exit(10);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> k(kKvHeads * kDim), v(kKvHeads * kDim);
    for (int64_t p = 0; p < 4000; ++p) {
      for (int il = 0; il < 3; ++il) {
        for (float& x : k) x = nd(rng);
        for (float& x : v) x = nd(rng);
        Status s = (*c)->Store(il, p, k.data(), v.data());
        if (!s.ok()) {
          const bool named = s.message().find(dir.path.string()) != std::string::npos;
          ::_exit(s.code() == StatusCode::kResourceExhausted && named ? 0 : 11);
        }
      }
    }
    ::_exit(12);  // never ran out of room
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Issue 37 item 7: a saved state encodes the document it was computed from,
// so it is readable by its owner alone whatever the umask, even when a
// stale temporary file of a crashed writer (same pid) was world-readable.
TEST(KvStateFile, SavedStateIsOwnerOnlyUnderUmask022) {
  TempDir dir;
  auto c = KvCache::Create(Options(256, KvType::kF16));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(RunAll(**c, 64).ok());
  const std::vector<TokenId> tokens(64, 7);
  const std::string path = (dir.path / "state.kvs").string();
  const std::string stale = path + ".tmp." + std::to_string(::getpid());
  const mode_t old_umask = ::umask(022);
  { std::ofstream(stale) << "stale"; }
  ::chmod(stale.c_str(), 0644);
  const Status saved = SaveKvState(**c, tokens, "fingerprint", path);
  ::umask(old_umask);
  ASSERT_TRUE(saved.ok()) << saved.ToString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_FALSE(fs::exists(stale));
  // And it restores.
  auto restored = KvCache::Create(Options(256, KvType::kF16));
  ASSERT_TRUE(restored.ok());
  auto n = LoadKvState(**restored, tokens, "fingerprint", path);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 64);
}

}  // namespace
}  // namespace ellm::kv
