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
// Not thread-safe: one owner (the session); attention reads the views
// Acquire returns from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/engine.h"
#include "kv/spill_file.h"

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
  KvType type = KvType::kF16;
  uint64_t memory_budget = 0;  // resident bytes allowed; 0 = no limit
  std::string spill_dir;       // required when memory_budget > 0
  int zstd_level = 1;
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
  // message says how much) and opens the spill file.
  static StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheOptions& options);
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

  KvStats stats() const { return stats_; }

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
  Status MakeRoom(uint64_t bytes);
  Status Spill(int il, Block* block);
  Status ReadBack(int il, const Block& block, uint8_t* dst) const;
  int NodeOf(int il, int h) const { return o_.node_of ? o_.node_of(il, h) : -1; }
  uint64_t BlockBytes() const { return slice_bytes_ * static_cast<uint64_t>(o_.n_head_kv); }

  KvCacheOptions o_;
  SliceMemory* mem_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0, slice_bytes_ = 0;
  int64_t ring_blocks_ = 0;
  std::vector<Layer> layers_;
  std::unique_ptr<SpillFile> spill_;
  // Staging for read-back blocks: kMaxChunkBlocks blocks, all heads.
  std::vector<uint8_t> staging_;
  std::vector<std::vector<const uint8_t*>> staging_slices_;
  mutable std::vector<uint8_t> codec_scratch_, enc_scratch_, read_scratch_;
  std::vector<float> row_scratch_;
  KvStats stats_;
};

}  // namespace ellm::kv
