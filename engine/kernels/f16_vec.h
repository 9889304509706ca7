// Vector primitives on f16 rows (the KV cache's storage type), used by
// attention. Contracts:
//   DotF16(n, k, q)      = sum_i f32(k[i]) * q[i], accumulated in f32
//   AxpyF16(n, w, v, y): y[i] += w * f32(v[i])
// k, v: n f16 values (IEEE binary16 bits); q, y: n floats; no aliasing.
// Pure, thread-safe; the AVX2 versions use F16C conversions and differ from
// the references only in the order of the f32 additions (DotF16).
#pragma once

#include <cstdint>

#include "ellm/engine/cpu_features.h"

namespace ellm::kernels {

using DotF16Fn = float (*)(int n, const uint16_t* k, const float* q);
using AxpyF16Fn = void (*)(int n, float w, const uint16_t* v, float* y);

struct F16VecKernels {
  DotF16Fn dot;
  AxpyF16Fn axpy;
};

// The implementation for HostCpu().Level(), chosen once.
const F16VecKernels& GetF16Vec();
const F16VecKernels& GetF16VecAt(IsaLevel level);

}  // namespace ellm::kernels
