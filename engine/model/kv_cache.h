// KV cache for one sequence: per layer, K and V rows indexed by position.
// Full-attention layers keep every position; sliding-window layers keep a
// ring of (window + micro_batch) positions, enough for any query in a
// micro-batch to see its whole window.
//
// Storage types: f16 (the default, llama.cpp's default too, and with it the
// attention rounds exactly where llama.cpp's CPU backend does) and f32 (the
// unrounded path). bf16 and q8_0 storage, block layout, NUMA placement and
// spill come with the KV work.
#pragma once

#include <cstdint>
#include <vector>

#include "ellm/engine/engine.h"
#include "model/model.h"

namespace ellm::model {

class KvCache {
 public:
  // n_ctx: positions the sequence may reach; micro_batch: largest batch
  // appended at once.
  KvCache(const Model& model, int64_t n_ctx, int64_t micro_batch, KvType type);
  // A cache of `n_layer` layers that all keep `capacity` positions, for
  // tests of attention without a model.
  static KvCache ForTest(int n_layer, int64_t k_row, int64_t v_row, int64_t n_ctx, int64_t capacity,
                         KvType type);

  KvType type() const { return type_; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t capacity(int il) const { return capacity_[il]; }
  // Stores the K and V rows (k_row and v_row floats) of layer il at `pos`,
  // rounding to the storage type.
  void Store(int il, int64_t pos, const float* k, const float* v);
  // Raw rows at an absolute position: float* for kF32, uint16_t* (f16 bits)
  // for kF16. REQUIRES: the position is still held (within the window for
  // sliding layers).
  const void* K(int il, int64_t pos) const { return Row(k_[il], il, pos, k_row_); }
  const void* V(int il, int64_t pos) const { return Row(v_[il], il, pos, v_row_); }
  // Bytes held, all layers.
  uint64_t bytes() const;

 private:
  KvCache() = default;
  size_t ElemBytes() const { return type_ == KvType::kF32 ? 4 : 2; }
  const uint8_t* Row(const std::vector<uint8_t>& buf, int il, int64_t pos, int64_t row) const {
    return buf.data() + (pos % capacity_[il]) * row * ElemBytes();
  }
  void Allocate(int64_t capacity);

  KvType type_ = KvType::kF16;
  int64_t n_ctx_ = 0;
  int64_t k_row_ = 0, v_row_ = 0;
  std::vector<int64_t> capacity_;
  std::vector<std::vector<uint8_t>> k_, v_;
};

}  // namespace ellm::model
