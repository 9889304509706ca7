#include "kv/kv_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kv/block_codec.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace ellm::kv {
namespace {

std::string Mib(uint64_t bytes);

class HeapMemory final : public SliceMemory {
 public:
  StatusOr<void*> Allocate(size_t bytes, int /*node*/) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) {
      return ResourceExhaustedError("out of memory allocating " + Mib(bytes) + " of KV cache");
    }
    return p;
  }
  void Free(void* p, size_t /*bytes*/) override { std::free(p); }
};

std::string Mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

void StoreRow(KvType type, const float* src, int dim, uint8_t* dst) {
  switch (type) {
    case KvType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(dim) * 4);
      return;
    case KvType::kF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int i = 0; i < dim; ++i) d[i] = quant::Fp32ToFp16(src[i]);
      return;
    }
    case KvType::kBF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int i = 0; i < dim; ++i) d[i] = quant::Fp32ToBf16(src[i]);
      return;
    }
    case KvType::kQ8_0:
      quant::QuantizeRow(quant::TensorType::kQ8_0, src, dst, dim);
      return;
  }
}

}  // namespace

SliceMemory& HeapSliceMemory() {
  static HeapMemory heap;
  return heap;
}

int KvElemBytes(KvType t) {
  switch (t) {
    case KvType::kF32:
      return 4;
    case KvType::kF16:
    case KvType::kBF16:
      return 2;
    case KvType::kQ8_0:
      return 1;
  }
  return 1;
}

size_t KvRowBytes(KvType type, int dim) {
  if (type == KvType::kQ8_0) return static_cast<size_t>(dim) / 32 * 34;
  return static_cast<size_t>(dim) * static_cast<size_t>(KvElemBytes(type));
}

KvCache::KvCache(const KvCacheOptions& o)
    : o_(o), mem_(o.memory != nullptr ? o.memory : &HeapSliceMemory()) {}

StatusOr<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheOptions& o) {
  if (o.n_head_kv < 1 || o.head_dim_k < 1 || o.head_dim_v < 1 || o.n_ctx < 1 || o.micro_batch < 1 ||
      o.windows.empty()) {
    return InvalidArgumentError("KV cache: bad shape");
  }
  if (o.type == KvType::kQ8_0 && (o.head_dim_k % 32 != 0 || o.head_dim_v % 32 != 0)) {
    return InvalidArgumentError("KV type q8_0 needs head sizes that are multiples of 32 (have " +
                                std::to_string(o.head_dim_k) + "/" + std::to_string(o.head_dim_v) +
                                ")");
  }
  std::unique_ptr<KvCache> c(new KvCache(o));
  c->k_row_bytes_ = KvRowBytes(o.type, o.head_dim_k);
  c->v_row_bytes_ = KvRowBytes(o.type, o.head_dim_v);
  c->slice_bytes_ = static_cast<size_t>(kBlockPositions) * (c->k_row_bytes_ + c->v_row_bytes_);
  // A micro-batch at pos0 reads keys from pos0 - window + 1 up to
  // pos0 + micro_batch - 1: that span touches at most this many blocks.
  uint64_t ring_bytes = 0;
  int n_full = 0;
  const int64_t max_blocks = (o.n_ctx + kBlockPositions - 1) / kBlockPositions;
  for (int w : o.windows) {
    Layer layer;
    layer.window = w;
    if (w > 0) {
      const int64_t span = w + o.micro_batch - 1;
      const int64_t ring = std::min(max_blocks, (span + kBlockPositions - 1) / kBlockPositions + 1);
      layer.blocks.resize(static_cast<size_t>(ring));
      ring_bytes += static_cast<uint64_t>(ring) * c->BlockBytes();
    } else {
      layer.blocks.resize(static_cast<size_t>(max_blocks));
      ++n_full;
    }
    c->layers_.push_back(std::move(layer));
  }
  if (o.map_spill && o.zstd_level != 0) {
    return InvalidArgumentError(
        "mapped KV spill reads (kv.spill_read: map) need raw spill blocks (kv.spill_zstd_level 0), "
        "not "
        "zstd level " +
        std::to_string(o.zstd_level));
  }
  if (o.memory_budget > 0) {
    if (o.spill_dir.empty()) {
      return InvalidArgumentError(
          "a KV memory budget (kv.memory_budget) needs a spill directory "
          "(kv.spill_dir)");
    }
    const int64_t staging_blocks = StagingBlocks(o);
    const uint64_t minimum =
        ring_bytes + static_cast<uint64_t>(n_full + staging_blocks) * c->BlockBytes();
    if (o.memory_budget < minimum) {
      return InvalidArgumentError("KV memory budget " + Mib(o.memory_budget) + " is below the " +
                                  Mib(minimum) + " this model needs at least (sliding windows " +
                                  Mib(ring_bytes) + ", one block per full-attention layer" +
                                  (staging_blocks > 0
                                       ? " and " + std::to_string(staging_blocks) +
                                             " blocks to read spilled ones back into)"
                                       : ")"));
    }
    ELLM_ASSIGN_OR_RETURN(c->spill_, SpillFile::Open(o.spill_dir, o.zstd_level));
    c->staging_.resize(static_cast<size_t>(staging_blocks * c->BlockBytes()));
    c->stats_.resident_bytes = c->staging_.size();
    c->stats_.peak_resident_bytes = c->staging_.size();
    c->staging_slices_.resize(static_cast<size_t>(staging_blocks));
    for (int64_t i = 0; i < staging_blocks; ++i) {
      for (int h = 0; h < o.n_head_kv; ++h) {
        c->staging_slices_[i].push_back(c->staging_.data() + i * c->BlockBytes() +
                                        h * c->slice_bytes_);
      }
    }
    if (o.prefetch && !o.map_spill) {
      c->prefetcher_ = std::make_unique<SpillPrefetcher>(c->spill_.get(), c->BlockBytes());
    }
  }
  return c;
}

KvCache::~KvCache() {
  for (Layer& l : layers_) {
    for (Block& b : l.blocks) Drop(&b);
  }
}

void KvCache::Drop(Block* block) {
  FreeSlices(block);
  Unmap(block);
  *block = Block{};
}

void KvCache::Unmap(Block* block) {
  if (block->map == nullptr) return;
  SpillFile::UnmapPages(block->map, BlockBytes());
  block->map = nullptr;
  block->map_slices.clear();
}

void KvCache::FreeSlices(Block* block) {
  if (block->slices.empty()) return;
  for (uint8_t* s : block->slices) mem_->Free(s, slice_bytes_);
  block->slices.clear();
  stats_.resident_bytes -= BlockBytes();
}

Status KvCache::AllocateSlices(int il, Block* block) {
  ELLM_RETURN_IF_ERROR(MakeRoom(BlockBytes()));
  for (int h = 0; h < o_.n_head_kv; ++h) {
    StatusOr<void*> p = mem_->Allocate(slice_bytes_, NodeOf(il, h));
    if (!p.ok()) {
      for (uint8_t* s : block->slices) mem_->Free(s, slice_bytes_);
      block->slices.clear();
      return p.status();
    }
    block->slices.push_back(static_cast<uint8_t*>(*p));
  }
  stats_.resident_bytes += BlockBytes();
  stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, stats_.resident_bytes);
  return OkStatus();
}

// Spills the oldest full blocks of full-attention layers until `bytes` more fit.
Status KvCache::MakeRoom(uint64_t bytes) {
  if (o_.memory_budget == 0) return OkStatus();
  while (stats_.resident_bytes + bytes > o_.memory_budget) {
    int victim_layer = -1;
    int64_t victim = std::numeric_limits<int64_t>::max();
    for (int il = 0; il < n_layer(); ++il) {
      const Layer& l = layers_[il];
      if (l.window > 0) continue;
      // The last allocated block may still be filling: never spill it.
      for (int64_t b = 0; b + 1 < l.written_blocks && b < victim; ++b) {
        if (!l.blocks[b].slices.empty()) {
          victim = b;
          victim_layer = il;
          break;
        }
      }
    }
    if (victim_layer < 0) {
      return ResourceExhaustedError("KV memory budget " + Mib(o_.memory_budget) +
                                    " exhausted with nothing left to spill");
    }
    ELLM_RETURN_IF_ERROR(Spill(victim_layer, &layers_[victim_layer].blocks[victim]));
  }
  return OkStatus();
}

Status KvCache::Spill(int il, Block* block) {
  (void)il;
  std::vector<uint8_t>& raw = codec_scratch_;
  raw.resize(BlockBytes());
  for (int h = 0; h < o_.n_head_kv; ++h) {
    std::memcpy(raw.data() + h * slice_bytes_, block->slices[h], slice_bytes_);
  }
  std::vector<uint8_t> enc;
  EncodeBlock(raw.data(), raw.size(), KvElemBytes(o_.type), o_.zstd_level, enc_scratch_, &enc);
  uint64_t offset = 0;
  if (o_.map_spill) {
    // The raw bytes on a page boundary, mapped where they were written.
    ELLM_ASSIGN_OR_RETURN(offset,
                          spill_->AppendPageAligned(enc.data(), enc.size(), kBlockHeaderBytes));
    ELLM_ASSIGN_OR_RETURN(block->map, spill_->MapPages(offset + kBlockHeaderBytes, raw.size()));
    for (int h = 0; h < o_.n_head_kv; ++h) {
      block->map_slices.push_back(block->map + h * slice_bytes_);
    }
  } else {
    ELLM_ASSIGN_OR_RETURN(offset, spill_->Append(enc.data(), enc.size()));
  }
  block->spilled = true;
  block->spill_offset = offset;
  block->spill_bytes = enc.size();
  stats_.spilled_bytes += raw.size();
  stats_.spilled_encoded_bytes += enc.size();
  FreeSlices(block);
  return OkStatus();
}

Status KvCache::ReadBack(int il, const Block& block, uint8_t* dst) const {
  // Attention reads every spilled block once per micro-batch: reuse the buffer.
  return spill_->ReadBlock(block.spill_offset, block.spill_bytes, dst, BlockBytes(), decoder_,
                           read_scratch_, [&] {
                             return "KV spill block " + std::to_string(block.index) + " of layer " +
                                    std::to_string(il) + " in '" + spill_->dir() + "'";
                           });
}

StatusOr<KvCache::Block*> KvCache::BlockForWrite(int il, int64_t b) {
  Layer& l = layers_[il];
  if (l.window > 0) {
    Block& slot = l.blocks[static_cast<size_t>(b % static_cast<int64_t>(l.blocks.size()))];
    if (slot.slices.empty()) ELLM_RETURN_IF_ERROR(AllocateSlices(il, &slot));
    slot.index = b;
    return &slot;
  }
  Block& block = l.blocks[static_cast<size_t>(b)];
  if (block.slices.empty()) {
    const bool spilled = block.spilled;
    // Positions arrive in order, so the blocks before b are full now and
    // may be spilled to make room for this one.
    l.written_blocks = std::max(l.written_blocks, b + 1);
    ELLM_RETURN_IF_ERROR(AllocateSlices(il, &block));
    if (spilled) {
      // Writing into a spilled block again (after a restore): bring it back.
      std::vector<uint8_t> raw(BlockBytes());
      ELLM_RETURN_IF_ERROR(ReadBack(il, block, raw.data()));
      for (int h = 0; h < o_.n_head_kv; ++h) {
        std::memcpy(block.slices[h], raw.data() + h * slice_bytes_, slice_bytes_);
      }
      block.spilled = false;
      Unmap(&block);
    }
    block.index = b;
  }
  return &block;
}

Status KvCache::Store(int il, int64_t pos, const float* k, const float* v) {
  const int64_t b = pos / kBlockPositions;
  const int64_t row = pos % kBlockPositions;
  ELLM_ASSIGN_OR_RETURN(Block * block, BlockForWrite(il, b));
  for (int h = 0; h < o_.n_head_kv; ++h) {
    uint8_t* slice = block->slices[h];
    StoreRow(o_.type, k + int64_t{h} * o_.head_dim_k, o_.head_dim_k, slice + row * k_row_bytes_);
    StoreRow(o_.type, v + int64_t{h} * o_.head_dim_v, o_.head_dim_v,
             slice + kBlockPositions * k_row_bytes_ + row * v_row_bytes_);
  }
  return OkStatus();
}

const KvCache::Block& KvCache::HeldBlock(int il, int64_t b) const {
  const Layer& l = layers_[il];
  if (l.window > 0) return l.blocks[static_cast<size_t>(b % static_cast<int64_t>(l.blocks.size()))];
  return l.blocks[static_cast<size_t>(b)];
}

std::vector<SpillPrefetcher::Item> KvCache::SpilledItems(int il, int64_t b0, int64_t n, int half) {
  std::vector<SpillPrefetcher::Item> items;
  const Layer& l = layers_[il];
  const int64_t b1 = std::min(b0 + n, l.written_blocks);
  for (int64_t b = b0; b < b1; ++b) {
    const Block& block = l.blocks[static_cast<size_t>(b)];
    if (!block.slices.empty() || !block.spilled) continue;
    items.push_back({block.spill_offset, block.spill_bytes, StagingBlock(half, b - b0), il, b});
  }
  return items;
}

void KvCache::StartPrefetch(int il, int64_t b0, int64_t b1, int half) {
  // The rest of this layer first. Blocks are spilled oldest first, so once a
  // chunk has none, neither has any later chunk of the layer.
  std::vector<SpillPrefetcher::Item> items = SpilledItems(il, b1, b1 - b0, half);
  int next_il = il;
  int64_t next_b0 = b1;
  for (int step = 1; items.empty() && step <= n_layer(); ++step) {
    next_il = (il + step) % n_layer();
    next_b0 = 0;
    if (layers_[next_il].window == 0) items = SpilledItems(next_il, 0, kMaxChunkBlocks, half);
  }
  if (items.empty()) return;
  prefetch_stats_.issued += items.size();
  pending_ = {next_il, next_b0, half};
  prefetcher_->Start(std::move(items));
}

Status KvCache::Acquire(int il, int64_t b0, int64_t b1, std::vector<BlockView>* views) {
  views->clear();
  bool needs_staging = false;
  for (int64_t b = b0; b < b1; ++b) {
    const Block& block = HeldBlock(il, b);
    if (block.index != b) {
      return InternalError("KV block " + std::to_string(b) + " of layer " + std::to_string(il) +
                           " is not held");
    }
    needs_staging |= block.slices.empty() && block.map == nullptr;
  }
  // The prefetch queued last time: use it if it is for this chunk; drop it
  // if this chunk needs the staging it writes into; else leave it running
  // (a sliding-window layer between two full ones).
  SpillPrefetcher::Outcome prefetched;
  const bool busy = prefetcher_ != nullptr && prefetcher_->busy();
  const bool hit = busy && pending_.il == il && pending_.b0 == b0;
  std::vector<SpillPrefetcher::Item> items;
  std::vector<bool> used;
  if (hit) {
    items = prefetcher_->items();
    used.assign(items.size(), false);
    prefetched = prefetcher_->Finish(decoder_);
    view_half_ = pending_.half;
  } else if (busy && needs_staging) {
    prefetch_stats_.wasted += prefetcher_->items().size();
    prefetcher_->Cancel();
  }
  Status status;
  for (int64_t b = b0; b < b1 && status.ok(); ++b) {
    const Block& block = HeldBlock(il, b);
    if (!block.slices.empty()) {
      views->push_back({b * kBlockPositions, block.slices.data()});
      continue;
    }
    if (block.map != nullptr) {
      // Read in place from the spill file's pages.
      stats_.read_back_bytes += BlockBytes();
      views->push_back({b * kBlockPositions, block.map_slices.data()});
      continue;
    }
    const int64_t slot = view_half_ * kMaxChunkBlocks + (b - b0);
    size_t k = 0;
    while (k < items.size() && items[k].block != b) ++k;
    if (k < items.size() && items[k].offset == block.spill_offset) {
      // Decoded ahead (or just now, alongside the I/O thread).
      status = prefetched.status[k];
      used[k] = true;
      ++(prefetched.by_thread[k] ? prefetch_stats_.by_thread : prefetch_stats_.by_caller);
    } else {
      status = ReadBack(il, block, StagingBlock(view_half_, b - b0));
      ++prefetch_stats_.sync;
    }
    stats_.read_back_bytes += BlockBytes();
    views->push_back({b * kBlockPositions, staging_slices_[static_cast<size_t>(slot)].data()});
  }
  prefetch_stats_.wasted += std::count(used.begin(), used.end(), false);
  if (!status.ok()) {
    views->clear();
    return status;
  }
  if (prefetcher_ != nullptr && !prefetcher_->busy() && layers_[il].window == 0) {
    StartPrefetch(il, b0, b1, 1 - view_half_);
  }
  return OkStatus();
}

void KvCache::WaitForPrefetchForTest() {
  if (prefetcher_ != nullptr && prefetcher_->busy()) prefetcher_->WaitForThreadForTest();
}

Status KvCache::Clear() {
  // The spill file is about to be truncated and its offsets reused.
  if (prefetcher_ != nullptr && prefetcher_->busy()) {
    prefetch_stats_.wasted += prefetcher_->items().size();
    prefetcher_->Cancel();
  }
  for (Layer& l : layers_) {
    for (Block& b : l.blocks) Drop(&b);
    l.written_blocks = 0;
  }
  // Spill counters describe one sequence; residency carries on.
  stats_.spilled_bytes = stats_.spilled_encoded_bytes = stats_.read_back_bytes = 0;
  if (spill_ != nullptr) ELLM_RETURN_IF_ERROR(spill_->Clear());
  return OkStatus();
}

bool KvCache::CanTruncate(int64_t n) const {
  const int64_t end = (n + kBlockPositions - 1) / kBlockPositions;
  for (const Layer& l : layers_) {
    if (l.window == 0) continue;
    // The query at position n reads keys from n - window + 1 on.
    for (int64_t b = std::max<int64_t>(0, n - l.window) / kBlockPositions; b < end; ++b) {
      const Block& held = l.blocks[static_cast<size_t>(b % static_cast<int64_t>(l.blocks.size()))];
      if (held.slices.empty() || held.index != b) return false;
    }
  }
  return true;
}

Status KvCache::Truncate(int64_t n) {
  if (!CanTruncate(n)) {
    return FailedPreconditionError(
        "the sliding-window layers no longer hold the positions before " + std::to_string(n));
  }
  // The prefetch may be reading blocks about to be dropped.
  if (prefetcher_ != nullptr && prefetcher_->busy()) {
    prefetch_stats_.wasted += prefetcher_->items().size();
    prefetcher_->Cancel();
  }
  const int64_t end = (n + kBlockPositions - 1) / kBlockPositions;
  for (Layer& l : layers_) {
    if (l.window > 0) {
      for (Block& slot : l.blocks) {
        if (slot.index >= end) Drop(&slot);
      }
      continue;
    }
    for (int64_t b = end; b < l.written_blocks; ++b) Drop(&l.blocks[static_cast<size_t>(b)]);
    l.written_blocks = std::min(l.written_blocks, end);
  }
  return OkStatus();
}

StatusOr<std::vector<const uint8_t*>> KvCache::SlicesForSave(int il, int64_t b) {
  std::vector<BlockView> views;
  ELLM_RETURN_IF_ERROR(Acquire(il, b, b + 1, &views));
  return std::vector<const uint8_t*>(views[0].slices, views[0].slices + o_.n_head_kv);
}

StatusOr<std::vector<uint8_t*>> KvCache::SlicesForRestore(int il, int64_t b) {
  ELLM_ASSIGN_OR_RETURN(Block * block, BlockForWrite(il, b));
  return block->slices;
}

std::vector<int64_t> KvCache::HeldBlocks(int il) const {
  const Layer& l = layers_[il];
  std::vector<int64_t> out;
  if (l.window > 0) {
    for (const Block& b : l.blocks) out.push_back(b.slices.empty() ? -1 : b.index);
  } else {
    for (int64_t b = 0; b < l.written_blocks; ++b) out.push_back(b);
  }
  return out;
}

}  // namespace ellm::kv
