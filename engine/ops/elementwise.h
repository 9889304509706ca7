// Row-wise operations of the forward pass on f32 activations, written to
// compute exactly what ggml's CPU backend computes (order of accumulation
// included, where it changes results). Scalar loops the compiler
// vectorises; intrinsics, if they ever pay here, go to kernels/.
#pragma once

#include <cstdint>

namespace ellm::ops {

// y = x / sqrt(mean(x^2) + eps) * w over one row of n (w may be null: no
// scale). Sum of squares in double as ggml_compute_forward_rms_norm_f32.
// x and y may alias.
void RmsNorm(const float* x, const float* w, float* y, int64_t n, float eps);

// Which elements of a head RoPE rotates together: (i, i + head_dim/2) as
// ggml's GGML_ROPE_TYPE_NEOX, or (2i, 2i + 1) as its normal mode.
enum class RopePairs { kNeox, kAdjacent };

// RoPE's frequencies, as ggml_rope_ext takes them. Pair i turns by
//   theta_i = pos * base^(-2i/head_dim) / freq_factors[i]
// then scaled by freq_scale, or with YaRN (ext_factor > 0) mixed between the
// scaled and unscaled angle by a ramp over the pairs [corr_low, corr_high]
// and cos/sin multiplied by attn_factor * (1 + 0.1 ln(1/freq_scale)).
// Ref: ggml-cpu ops.cpp rope_yarn / ggml_rope_cache_init; the YaRN paper,
// arXiv:2309.00071.
struct RopeParams {
  float base = 10000.0f;
  float freq_scale = 1.0f;                  // 1 / linear scaling factor
  const float* freq_factors = nullptr;      // [head_dim/2] divisors, or null (all 1)
  float ext_factor = 0.0f;                  // YaRN extrapolation mix; 0 = off
  float attn_factor = 1.0f;                 // magnitude scale of cos and sin
  float corr_low = 0.0f, corr_high = 0.0f;  // YaRN ramp, from RopeYarnCorrDims
};

// In-place RoPE on `n_heads` heads of `head_dim` floats each (contiguous),
// position `pos`. theta is built by repeated float multiplication as ggml's
// rope cache does. REQUIRES: head_dim even, <= 2048.
void Rope(float* x, int n_heads, int head_dim, int64_t pos, RopePairs pairs, const RopeParams& p);
// The NEOX case with plain linear scaling.
void RopeNeox(float* x, int n_heads, int head_dim, int64_t pos, float base, float freq_scale);
// YaRN's correction range [low, high] in pairs for a context of n_ctx_orig
// positions (ggml_rope_yarn_corr_dims; beta_fast/slow in rotations).
void RopeYarnCorrDims(int head_dim, int n_ctx_orig, float base, float beta_fast, float beta_slow,
                      float* low, float* high);

// GELU, tanh approximation (ggml_gelu). ggml evaluates it through an f16
// lookup table of the f16-rounded input; `f16_table` does the same.
float GeluTanh(float x);
// y[i] = gelu(gate[i]) * up[i]. y may alias gate or up.
void GeGlu(const float* gate, const float* up, float* y, int64_t n);

// y[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x) as ggml_silu_f32,
// with e^-x from the attention kernels' vector exp (as ggml's vector SiLU
// uses its own, not libm's). y may alias gate or up.
void SwiGlu(const float* gate, const float* up, float* y, int64_t n);

// log(sum_i exp(x[i])) over n > 0 values (a row of logits), as llama.cpp's
// perplexity computes it: the float max, exp(x[i] - max) summed in double
// (in eight interleaved partial sums), with the exps from the attention
// kernels' vector exp (within 2 ulp of std::exp) rather than one libm call
// per element, which took longer than a token's forward pass on a 262,144
// token vocabulary.
double LogSumExp(const float* x, int64_t n);

// y[i] += x[i]
void AddInPlace(float* y, const float* x, int64_t n);
void Scale(float* x, float s, int64_t n);
// Adds the bias b[0..n) to each of `rows` rows of n floats in y.
void AddRowBias(float* y, const float* b, int64_t rows, int64_t n);

}  // namespace ellm::ops
