// Tensor formats: decoding stored weights and encoding activations.
//
// One format per file (engine/quant/<format>.{h,cc}): its block struct with
// a static_assert on the size, and its scalar reference decode. This header
// is the single entry point; the table behind it is filled from those files.
// Everything here is the scalar truth that SIMD kernels are tested against.
#pragma once

#include <cstdint>

#include "ellm/engine/tensor_type.h"

namespace ellm::quant {

// True when DequantizeRow supports `t`.
bool CanDequantize(TensorType t);

// Decodes `n` elements of type `t` at `src` into `dst`.
// REQUIRES: CanDequantize(t); n % Traits(t).block_elems == 0; src and dst do
// not overlap. Bit-exact with ggml's dequantize_row_* for that type.
void DequantizeRow(TensorType t, const void* src, float* dst, int64_t n);

// The activation format a weight type's integer dot product consumes, as
// ggml's vec_dot_type: Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1,
// Q8_K for the K-quants and IQ4_XS, F16 for F16, BF16 for BF16, F32 for F32.
// Types with no dot product (the other IQ formats, Q8_1, Q8_K, ...) get F32:
// decode, then use F32's.
TensorType ActivationTypeFor(TensorType weight);

// Encodes `n` floats into activation format `t` (Q8_0, Q8_1, Q8_K, F16,
// BF16 or F32), rounding exactly as ggml's quantize_row_*_ref does.
// REQUIRES: n % Traits(t).block_elems == 0.
void QuantizeRow(TensorType t, const float* src, void* dst, int64_t n);

}  // namespace ellm::quant
