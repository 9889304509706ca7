#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "quant/fp16.h"

namespace ellm::model {

void KvCache::Allocate(int64_t capacity) {
  capacity_.push_back(capacity);
  k_.emplace_back(static_cast<size_t>(capacity * k_row_) * ElemBytes());
  v_.emplace_back(static_cast<size_t>(capacity * v_row_) * ElemBytes());
}

KvCache::KvCache(const Model& model, int64_t n_ctx, int64_t micro_batch, KvType type)
    : type_(type), n_ctx_(n_ctx) {
  const HParams& hp = model.hparams();
  k_row_ = int64_t{hp.n_head_kv} * hp.head_dim_k;
  v_row_ = int64_t{hp.n_head_kv} * hp.head_dim_v;
  for (const Layer& l : model.layers()) {
    Allocate(l.sliding ? std::min<int64_t>(n_ctx, hp.sliding_window + micro_batch) : n_ctx);
  }
}

KvCache KvCache::ForTest(int n_layer, int64_t k_row, int64_t v_row, int64_t n_ctx, int64_t capacity,
                         KvType type) {
  KvCache c;
  c.type_ = type;
  c.n_ctx_ = n_ctx;
  c.k_row_ = k_row;
  c.v_row_ = v_row;
  for (int il = 0; il < n_layer; ++il) c.Allocate(capacity);
  return c;
}

void KvCache::Store(int il, int64_t pos, const float* k, const float* v) {
  uint8_t* kd = const_cast<uint8_t*>(Row(k_[il], il, pos, k_row_));
  uint8_t* vd = const_cast<uint8_t*>(Row(v_[il], il, pos, v_row_));
  if (type_ == KvType::kF32) {
    std::memcpy(kd, k, static_cast<size_t>(k_row_) * 4);
    std::memcpy(vd, v, static_cast<size_t>(v_row_) * 4);
    return;
  }
  auto* k16 = reinterpret_cast<uint16_t*>(kd);
  auto* v16 = reinterpret_cast<uint16_t*>(vd);
  for (int64_t i = 0; i < k_row_; ++i) k16[i] = quant::Fp32ToFp16(k[i]);
  for (int64_t i = 0; i < v_row_; ++i) v16[i] = quant::Fp32ToFp16(v[i]);
}

uint64_t KvCache::bytes() const {
  uint64_t b = 0;
  for (size_t i = 0; i < k_.size(); ++i) b += k_[i].size() + v_[i].size();
  return b;
}

}  // namespace ellm::model
