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

// In-place NEOX-style RoPE on `n_heads` heads of `head_dim` floats each
// (contiguous), position `pos`: rotates pairs (i, i + head_dim/2) by
// theta_i = pos * freq_scale * base^(-2i/head_dim). theta is built by
// repeated float multiplication as ggml's rope cache does.
void RopeNeox(float* x, int n_heads, int head_dim, int64_t pos, float base, float freq_scale);

// GELU, tanh approximation (ggml_gelu). ggml evaluates it through an f16
// lookup table of the f16-rounded input; `f16_table` does the same.
float GeluTanh(float x);
// y[i] = gelu(gate[i]) * up[i]. y may alias gate or up.
void GeGlu(const float* gate, const float* up, float* y, int64_t n);

// y[i] += x[i]
void AddInPlace(float* y, const float* x, int64_t n);
void Scale(float* x, float s, int64_t n);

}  // namespace ellm::ops
