// Dot products of one stored weight row with one activation row already
// encoded in ActivationTypeFor(weight type) — the inner loop of every matrix
// product. Contract for a VecDotFn(n, w, a):
//   n: elements in the row (a multiple of the weight type's block size);
//   w: n elements in the weight type; a: n elements in the activation type,
//      as quant::QuantizeRow writes it (Q8 quants in [-127, 127], Q8_K bsums
//      consistent with its quants: the SIMD kernels rely on both);
//   returns sum_i w[i] * a[i] computed the way ggml's ggml_vec_dot_<w>_<a>
//   does (integer products within blocks, float accumulation across blocks).
// Pure functions of their inputs, thread-safe, no allocation.
#pragma once

#include <cstdint>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/tensor_type.h"

namespace ellm::kernels {

using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

// The fastest implementation for `weight` that HostCpu().Level() allows,
// chosen once from a table filled at start-up; nullptr if the type has none.
VecDotFn GetVecDot(quant::TensorType weight);
// The implementation for an explicit level (tests compare each level with
// kScalar); falls back to the next lower level that has one.
VecDotFn GetVecDotAt(quant::TensorType weight, IsaLevel level);

// One weight row against four activation rows at once (prefill): the
// weight block is unpacked once and serves four tokens. Contract:
//   out[t] = VecDotFn(n, w, a + t * a_stride) for t < 4, bit for bit (same
//   accumulation order as the single-row kernel of the same level).
using VecDot4Fn = void (*)(int64_t n, const void* w, const void* a, size_t a_stride, float* out);

// The 4-row kernel for `weight` at HostCpu().Level(), or nullptr when that
// type/level has none (callers then loop over VecDotFn).
VecDot4Fn GetVecDot4(quant::TensorType weight);

}  // namespace ellm::kernels
