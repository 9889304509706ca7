// KvCache: the keys and values of one sequence, in fixed-size blocks.
//
// Layout (shared by attention, spill and saved states; change it only with
// the state-file version): a block holds kBlockPositions consecutive
// positions of one layer. It is split into one slice per KV head, each
// slice a separate allocation (so NUMA placement can put head h where the
// threads that read it run):
//   slice = K rows [kBlockPositions][k_row_bytes] then V rows
//           [kBlockPositions][v_row_bytes],
// rows in the storage type (f16/bf16/f32 elements, or q8_0 blocks of 32).
// Block b of a layer holds positions [b * kBlockPositions, (b+1) * ...).
//
// Full-attention layers keep every block; sliding-window layers keep a ring
// of just enough blocks for any query of a micro-batch to see its window.
// Under a memory budget, full blocks of full-attention layers (the oldest
// first) are encoded (block_codec.h) into an anonymous spill file and read
// back into a small staging area when attention visits them; a block is
// spilled only once it is full, and full blocks never change, so the bytes
// read back are the bytes written and results are bit-identical.
//
// Prefetch (options.prefetch, on by default under a budget): the staging
// area has two halves of kMaxChunkBlocks blocks. Acquire hands out views
// into one half and then asks a background I/O thread (spill_prefetcher.h)
// to read and decode the spilled blocks of the chunk it predicts comes
// next into the other: the following kMaxChunkBlocks blocks of the same
// layer, or, once a layer's spilled blocks are done, the first chunk of the
// next full-attention layer (cyclically, so that decode's next token finds
// layer one's first chunk ready). The next Acquire uses what was prefetched
// if it asks for that chunk (decoding on the calling thread whatever the I/O
// thread has not reached), and reads back synchronously anything else. A
// prefetched block is used only if it is still spilled at the same file
// offset, so results stay bit-identical however the prediction goes.
//
// Mapped spill (options.map_spill, raw blocks only): each spilled block is
// written with its raw bytes on a page boundary of the spill file and
// mapped read-only (MAP_SHARED) at once; Acquire hands out views into the
// mapping, so attention reads the page cache's pages in place, without the
// copy (about 12 GB/s on these machines, most of decode's cost under a
// budget). No staging area or prefetch thread. The trade-offs, which is why
// it is opt-in: mapped pages the process has touched count in its RSS (as
// file pages the kernel may drop and read again; the budget and
// stats().resident_bytes count only the cache's own memory); a block's
// checksum is checked when it is read back by copy (BlockForWrite, not
// Acquire), so a page the disk returns corrupt after the kernel dropped it
// goes unnoticed; and an I/O error while attention touches a mapped page
// raises SIGBUS, which ends the process instead of failing one request.
//
// Memory: both staging halves count as resident KV (stats, budget minimum).
// Outside the budget, as before: the codec's scratch (about three blocks on
// the owner's side, two on the I/O thread's) and the I/O thread's stack.
//
// Thread safety: not thread-safe: one owner (the session) calls every
// method; attention reads the views Acquire returns from many threads
// until the owner calls in again. The I/O thread is internal: it reads only
// the spill file (pread at offsets already written; Clear and the
// destructor stop it first) and writes only the staging half no view
// points into.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/kv_types.h"
#include "kv/block_codec.h"
#include "kv/spill_file.h"
#include "kv/spill_prefetcher.h"

namespace ellm::kv {

inline constexpr int64_t kBlockPositions = 256;
// Most blocks one Acquire may return (bounds the staging area).
inline constexpr int64_t kMaxChunkBlocks = 4;

// Where slices come from (NUMA node memory, locked memory, the heap).
// node -1 = no placement. Errors say why (out of memory, RLIMIT_MEMLOCK).
class SliceMemory {
 public:
  virtual ~SliceMemory() = default;
  virtual StatusOr<void*> Allocate(size_t bytes, int node) = 0;
  virtual void Free(void* p, size_t bytes) = 0;
};
// Plain heap memory, ignoring nodes.
SliceMemory& HeapSliceMemory();

struct KvCacheOptions {
  int n_head_kv = 1;
  int head_dim_k = 0;
  int head_dim_v = 0;
  std::vector<int> windows;  // per layer: 0 = full attention, else the sliding window
  int64_t n_ctx = 0;
  int64_t micro_batch = 1;  // most positions stored between two reads
  KvType type = KvType::kBF16;
  uint64_t memory_budget = 0;  // resident bytes allowed; 0 = no limit
  std::string spill_dir;       // required when memory_budget > 0
  int zstd_level = 0;          // 0: raw blocks (block_codec.h), else zstd at this level
  bool prefetch = true;        // read spilled blocks back ahead of use (see above)
  // Mapped read-back (opt-in, raw blocks only; see "Mapped spill" above):
  // attention reads spilled blocks straight from the spill file's pages.
  bool map_spill = false;
  std::function<int(int layer, int kv_head)> node_of;  // empty = -1 everywhere
  SliceMemory* memory = nullptr;                       // null = HeapSliceMemory()
};

// Bytes of one row of `dim` elements in `type` (q8_0: dim % 32 == 0).
size_t KvRowBytes(KvType type, int dim);
// The element size the block codec splits byte planes by (q8_0: 1, no split).
int KvElemBytes(KvType type);

class KvCache {
 public:
  // Checks the options (q8_0 needs head dims that are multiples of 32; a
  // budget needs a spill directory and must hold at least the sliding
  // windows, one block per full-attention layer and the staging area, the
  // message says how much), opens the spill file and starts the prefetch
  // thread.
  static StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheOptions& options);
  // Blocks of staging a budgeted cache holds resident: kMaxChunkBlocks, twice
  // with prefetch.
  static int64_t StagingBlocks(const KvCacheOptions& options) {
    if (options.map_spill) return 0;
    return options.prefetch ? 2 * kMaxChunkBlocks : kMaxChunkBlocks;
  }
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvCacheOptions& options() const { return o_; }
  KvType type() const { return o_.type; }
  int64_t n_ctx() const { return o_.n_ctx; }
  int n_layer() const { return static_cast<int>(o_.windows.size()); }
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }
  size_t slice_bytes() const { return slice_bytes_; }

  // Stores layer il's K and V rows at `pos` (n_head_kv * head_dim floats
  // each, heads contiguous), rounding to the storage type. May spill a cold
  // block to stay within the budget (errors: disk full, I/O).
  Status Store(int il, int64_t pos, const float* k, const float* v);

  struct BlockView {
    int64_t first_pos = 0;
    const uint8_t* const* slices = nullptr;  // [n_head_kv], layout above
  };
  // Makes blocks [b0, b1) of layer il readable: views->at(i) is block b0+i.
  // REQUIRES: 0 < b1 - b0 <= kMaxChunkBlocks; the blocks were stored (and,
  // for sliding layers, are still in the ring). Views stay valid until the
  // next Acquire, Store or Clear. Errors: a spilled block that cannot be
  // read back or fails its checksum (DATA_LOSS).
  Status Acquire(int il, int64_t b0, int64_t b1, std::vector<BlockView>* views);

  // Forgets every position; spilled blocks are dropped from the file and
  // the spill counters of stats() start again.
  Status Clear();

  // Keeps positions [0, n) and forgets the rest (the next Store is at n), so
  // that a sequence can continue from a shared prefix. Possible while every
  // sliding-window layer still holds the positions its window needs at n
  // (CanTruncate); otherwise FAILED_PRECONDITION and nothing changes.
  // Blocks past the prefix are freed; a spilled one's bytes stay in the
  // spill file until Clear. A spilled block that n falls inside is brought
  // back when it is next written (BlockForWrite). REQUIRES: n >= 0.
  bool CanTruncate(int64_t n) const;
  Status Truncate(int64_t n);

  KvStats stats() const { return stats_; }

  // Where read-back blocks were decoded (since Create); for tests and tuning.
  struct PrefetchStats {
    uint64_t issued = 0;     // blocks handed to the I/O thread
    uint64_t by_thread = 0;  // ... decoded by it and used
    uint64_t by_caller = 0;  // ... decoded by Acquire on the owner's thread and used
    uint64_t wasted = 0;     // ... decoded or cancelled but not used
    uint64_t sync = 0;       // spilled blocks Acquire read without a prefetch
  };
  PrefetchStats prefetch_stats() const { return prefetch_stats_; }
  // Waits until the I/O thread has decoded every block of the current
  // prefetch (tests: to make "the thread did it" deterministic).
  void WaitForPrefetchForTest();

  // Saved states (kv_state_file.cc) read and write slices directly.
  // Raw slices of block b of layer il (resident or read back), n_head_kv of them.
  StatusOr<std::vector<const uint8_t*>> SlicesForSave(int il, int64_t b);
  // Writable slices of block b of layer il (allocating it); for restoring.
  StatusOr<std::vector<uint8_t*>> SlicesForRestore(int il, int64_t b);
  // Blocks of layer il currently held: for a full layer, [0, n); for a
  // sliding layer, the block indices in the ring (-1 = empty slot).
  std::vector<int64_t> HeldBlocks(int il) const;
  // The spill file, when a budget is set (fault-injection tests).
  const SpillFile* spill_file_for_test() const { return spill_.get(); }

 private:
  struct Block {
    std::vector<uint8_t*> slices;  // resident slices, empty when not resident
    int64_t index = -1;            // block index held (ring slots)
    bool spilled = false;
    uint64_t spill_offset = 0;
    size_t spill_bytes = 0;
    // Mapped spill: the block's raw bytes in the spill file's pages, and
    // its slices in them; empty otherwise.
    const uint8_t* map = nullptr;
    std::vector<const uint8_t*> map_slices;
  };
  struct Layer {
    int window = 0;
    std::vector<Block> blocks;   // full: by index; sliding: ring slots
    int64_t written_blocks = 0;  // full layers: blocks [0, n) allocated so far
  };
  explicit KvCache(const KvCacheOptions& o);
  StatusOr<Block*> BlockForWrite(int il, int64_t b);
  Status AllocateSlices(int il, Block* block);
  void FreeSlices(Block* block);
  // Forgets a spilled block's mapping, if any.
  void Unmap(Block* block);
  // FreeSlices, Unmap, and the block emptied (Block{}); a spilled block's
  // bytes stay in the spill file.
  void Drop(Block* block);
  Status MakeRoom(uint64_t bytes);
  Status Spill(int il, Block* block);
  Status ReadBack(int il, const Block& block, uint8_t* dst) const;
  const Block& HeldBlock(int il, int64_t b) const;
  // Queues the spilled blocks of the chunk after [b0, b1) of layer il (see
  // the file comment) into staging half `half`.
  void StartPrefetch(int il, int64_t b0, int64_t b1, int half);
  // Chunk [b0, b0 + n) of layer il as prefetch items, or none if no block
  // in it is spilled.
  std::vector<SpillPrefetcher::Item> SpilledItems(int il, int64_t b0, int64_t n, int half);
  uint8_t* StagingBlock(int half, int64_t i) {
    return staging_.data() + (half * kMaxChunkBlocks + i) * BlockBytes();
  }
  int NodeOf(int il, int h) const { return o_.node_of ? o_.node_of(il, h) : -1; }
  uint64_t BlockBytes() const { return slice_bytes_ * static_cast<uint64_t>(o_.n_head_kv); }

  KvCacheOptions o_;
  SliceMemory* mem_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0, slice_bytes_ = 0;
  std::vector<Layer> layers_;
  std::unique_ptr<SpillFile> spill_;
  // Staging for read-back blocks: StagingBlocks() blocks, all heads; half h
  // holds blocks [h * kMaxChunkBlocks, (h + 1) * kMaxChunkBlocks).
  std::vector<uint8_t> staging_;
  std::vector<std::vector<const uint8_t*>> staging_slices_;
  int view_half_ = 0;  // the half the last Acquire's views may point into
  struct Pending {     // the prefetch job queued, when prefetcher_->busy()
    int il = 0;
    int64_t b0 = 0;
    int half = 0;
  } pending_;
  PrefetchStats prefetch_stats_;
  mutable std::vector<uint8_t> codec_scratch_, enc_scratch_, read_scratch_;
  mutable BlockDecoder decoder_;
  std::vector<float> row_scratch_;
  KvStats stats_;
  // Declared after spill_ so that it stops before the file closes.
  std::unique_ptr<SpillPrefetcher> prefetcher_;
};

}  // namespace ellm::kv
