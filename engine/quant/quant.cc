// The dispatch table behind quant.h: one row per TensorType we can decode or
// encode, filled from the per-format files.
#include "quant/quant.h"

#include <array>
#include <cstdlib>

#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/f32.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

namespace ellm::quant {
namespace {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);

// Adapters from the typed per-format functions to the type-erased table.
template <typename Block, void (*kFn)(const Block*, float*, int64_t)>
void Dequantize(const void* src, float* dst, int64_t n) {
  kFn(static_cast<const Block*>(src), dst, n);
}
template <typename Block, void (*kFn)(const float*, Block*, int64_t)>
void Quantize(const float* src, void* dst, int64_t n) {
  kFn(src, static_cast<Block*>(dst), n);
}

struct FormatOps {
  DequantizeFn dequantize = nullptr;
  QuantizeFn quantize = nullptr;  // only activation formats have one
  TensorType activation = TensorType::kF32;
  bool has_activation = false;
};

std::array<FormatOps, kMaxTypeId> BuildTable() {
  std::array<FormatOps, kMaxTypeId> t{};
  auto set = [&t](TensorType type, DequantizeFn dq, QuantizeFn q, TensorType act, bool has_act) {
    t[static_cast<uint32_t>(type)] = FormatOps{dq, q, act, has_act};
  };
  using T = TensorType;
  set(T::kF32, Dequantize<float, DequantizeF32>, Quantize<float, QuantizeF32>, T::kF32, true);
  set(T::kF16, Dequantize<uint16_t, DequantizeF16>, Quantize<uint16_t, QuantizeF16>, T::kF16, true);
  set(T::kBF16, Dequantize<uint16_t, DequantizeBF16>, Quantize<uint16_t, QuantizeBF16>, T::kBF16,
      true);
  set(T::kQ4_0, Dequantize<BlockQ4_0, DequantizeQ4_0>, nullptr, T::kQ8_0, true);
  set(T::kQ4_1, Dequantize<BlockQ4_1, DequantizeQ4_1>, nullptr, T::kQ8_1, true);
  set(T::kQ5_0, Dequantize<BlockQ5_0, DequantizeQ5_0>, nullptr, T::kQ8_0, true);
  set(T::kQ5_1, Dequantize<BlockQ5_1, DequantizeQ5_1>, nullptr, T::kQ8_1, true);
  set(T::kQ8_0, Dequantize<BlockQ8_0, DequantizeQ8_0>, Quantize<BlockQ8_0, QuantizeQ8_0>, T::kQ8_0,
      true);
  set(T::kQ8_1, Dequantize<BlockQ8_1, DequantizeQ8_1>, Quantize<BlockQ8_1, QuantizeQ8_1>, T::kQ8_1,
      false);
  set(T::kQ2_K, Dequantize<BlockQ2_K, DequantizeQ2_K>, nullptr, T::kQ8_K, true);
  set(T::kQ3_K, Dequantize<BlockQ3_K, DequantizeQ3_K>, nullptr, T::kQ8_K, true);
  set(T::kQ4_K, Dequantize<BlockQ4_K, DequantizeQ4_K>, nullptr, T::kQ8_K, true);
  set(T::kQ5_K, Dequantize<BlockQ5_K, DequantizeQ5_K>, nullptr, T::kQ8_K, true);
  set(T::kQ6_K, Dequantize<BlockQ6_K, DequantizeQ6_K>, nullptr, T::kQ8_K, true);
  set(T::kIQ4_NL, Dequantize<BlockIq4Nl, DequantizeIq4Nl>, nullptr, T::kQ8_0, true);
  set(T::kIQ4_XS, Dequantize<BlockIq4Xs, DequantizeIq4Xs>, nullptr, T::kQ8_K, true);
  set(T::kQ8_K, Dequantize<BlockQ8_K, DequantizeQ8_K>, Quantize<BlockQ8_K, QuantizeQ8_K>, T::kQ8_K,
      false);
  return t;
}

const FormatOps& Ops(TensorType t) {
  static const std::array<FormatOps, kMaxTypeId> table = BuildTable();
  static const FormatOps kNone{};
  const uint32_t id = static_cast<uint32_t>(t);
  return id < kMaxTypeId ? table[id] : kNone;
}

}  // namespace

bool CanDequantize(TensorType t) { return Ops(t).dequantize != nullptr; }

void DequantizeRow(TensorType t, const void* src, float* dst, int64_t n) {
  const DequantizeFn fn = Ops(t).dequantize;
  if (fn == nullptr || n % Traits(t).block_elems != 0) std::abort();  // caller broke REQUIRES
  fn(src, dst, n);
}

TensorType ActivationTypeFor(TensorType weight) {
  const FormatOps& ops = Ops(weight);
  return ops.has_activation ? ops.activation : TensorType::kF32;
}

void QuantizeRow(TensorType t, const float* src, void* dst, int64_t n) {
  const QuantizeFn fn = Ops(t).quantize;
  if (fn == nullptr || n % Traits(t).block_elems != 0) std::abort();  // caller broke REQUIRES
  fn(src, dst, n);
}

}  // namespace ellm::quant
