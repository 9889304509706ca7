// Per-element work on activations between the matrix products, where the
// scalar code showed in profiles of long prefills: encoding activation rows
// as Q8_0 for the packed GEMM, GELU through ggml's f16 table, and rounding
// queries to the KV cache's 16-bit type. Contracts:
//   quantize_q8_0(x, y, n): as quant::QuantizeQ8_0 (quantize_row_q8_0_ref:
//     d = amax / 127, id = 1 / d, q = roundf(x * id), ties away from zero),
//     bit for bit. REQUIRES: n % 32 == 0; x finite.
//   quantize_q8_k(x, y, n): as quant::QuantizeQ8_K (quantize_row_q8_K_ref:
//     the scale from the first value of largest magnitude, q rounded to
//     nearest even, per-16 sums), bit for bit; the activation encoding of
//     every K-quant product. REQUIRES: n % 256 == 0; x finite.
//   geglu_f16_table(table, gate, up, y, n): y[i] = a * up[i] with a = 0 for
//     gate[i] <= -10, gate[i] for gate[i] >= 10, else
//     f16_to_f32(table[f32_to_f16(gate[i])]) (ggml_vec_gelu_f32 with
//     GGML_GELU_FP16), bit for bit. table: 65536 f16 values. y may alias
//     gate or up.
//   round_f16 / round_bf16(x, y, n): y[i] = x[i] rounded to f16 / bf16
//     (nearest even, as quant::Fp32ToFp16 / Fp32ToBf16) and widened back,
//     bit for bit for finite x. y may alias x.
//   argmax(x, n): the index of the largest x[i], the lowest among equals
//     (std::max_element's answer when no x[i] is NaN); with NaNs, the index
//     std::max_element gives. Greedy decoding's pick over a vocabulary of
//     up to 262,144 logits, once per token and stream. REQUIRES: n >= 1.
// Every level equals the reference bit for bit: these are exact operations,
// vectorised. Pure, thread-safe, no allocation.
#pragma once

#include <cstdint>

#include "ellm/engine/cpu_features.h"
#include "quant/q8_0.h"
#include "quant/q8_k.h"

namespace ellm::kernels {

struct ActivationKernels {
  void (*quantize_q8_0)(const float* x, quant::BlockQ8_0* y, int64_t n);
  void (*quantize_q8_k)(const float* x, quant::BlockQ8_K* y, int64_t n);
  void (*geglu_f16_table)(const uint16_t* table, const float* gate, const float* up, float* y,
                          int64_t n);
  void (*round_f16)(const float* x, float* y, int64_t n);
  void (*round_bf16)(const float* x, float* y, int64_t n);
  int64_t (*argmax)(const float* x, int64_t n);
};

// The implementation for HostCpu().Level(), chosen once.
const ActivationKernels& GetActivationKernels();
const ActivationKernels& GetActivationKernelsAt(IsaLevel level);

namespace internal {
extern const ActivationKernels kActivationsRef;   // activations_ref.cc
extern const ActivationKernels kActivationsAvx2;  // activations_avx2.cc
}  // namespace internal

}  // namespace ellm::kernels
