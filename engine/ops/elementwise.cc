#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels/activations.h"
#include "kernels/attn_tile.h"
#include "quant/fp16.h"

namespace ellm::ops {

void RmsNorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    // ggml applies the scale (ggml_rms_norm) and then multiplies by the
    // weight (ggml_mul) as two rounding steps.
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

void Rope(float* x, int n_heads, int head_dim, int64_t pos, RopePairs pairs, const RopeParams& p) {
  const int half = head_dim / 2;
  const float theta_scale = std::pow(p.base, -2.0f / static_cast<float>(head_dim));
  float cos_cache[1024], sin_cache[1024];
  float theta = static_cast<float>(pos);
  for (int i = 0; i < half; ++i) {
    // As ggml's rope_yarn: the divisor of freq_factors first, then the
    // interpolation; with the defaults every step below is exact, so the
    // plain case rounds as it always did.
    const float ff = p.freq_factors != nullptr ? p.freq_factors[i] : 1.0f;
    const float theta_extrap = theta / ff;
    float t = p.freq_scale * theta_extrap;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float y =
          (static_cast<float>(i) - p.corr_low) / std::max(0.001f, p.corr_high - p.corr_low);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
      t = t * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cos_cache[i] = std::cos(t) * mscale;
    sin_cache[i] = std::sin(t) * mscale;
    theta *= theta_scale;
  }
  const int offset = pairs == RopePairs::kNeox ? half : 1;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      float* e = v + (pairs == RopePairs::kNeox ? i : 2 * i);
      const float x0 = e[0], x1 = e[offset];
      e[0] = x0 * cos_cache[i] - x1 * sin_cache[i];
      e[offset] = x0 * sin_cache[i] + x1 * cos_cache[i];
    }
  }
}

void RopeNeox(float* x, int n_heads, int head_dim, int64_t pos, float base, float freq_scale) {
  RopeParams p;
  p.base = base;
  p.freq_scale = freq_scale;
  Rope(x, n_heads, head_dim, pos, RopePairs::kNeox, p);
}

void RopeYarnCorrDims(int head_dim, int n_ctx_orig, float base, float beta_fast, float beta_slow,
                      float* low, float* high) {
  // The pair index whose wavelength makes n_rot rotations over n_ctx_orig.
  auto corr_dim = [&](float n_rot) {
    return static_cast<float>(head_dim) *
           std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(base));
  };
  *low = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  *high = std::min(static_cast<float>(head_dim - 1), std::ceil(corr_dim(beta_slow)));
}

namespace {

constexpr float kGeluCoefA = 0.044715f;
constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;

float GeluExact(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x)));
}

// ggml's table: gelu of every f16 value, stored as f16.
struct GeluTable {
  uint16_t v[1 << 16];
  GeluTable() {
    for (uint32_t i = 0; i < (1u << 16); ++i) {
      v[i] = quant::Fp32ToFp16(GeluExact(quant::Fp16ToFp32(static_cast<uint16_t>(i))));
    }
  }
};

const GeluTable& Table() {
  static const GeluTable table;
  return table;
}

}  // namespace

float GeluTanh(float x) {
  // As ggml_vec_gelu_f32 with GGML_GELU_FP16 (the kernel's contract: saturate
  // outside [-10, 10], else look up the f16-rounded input); times 1 is exact.
  const float one = 1.0f;
  float y;
  kernels::GetActivationKernels().geglu_f16_table(Table().v, &x, &one, &y, 1);
  return y;
}

void GeGlu(const float* gate, const float* up, float* y, int64_t n) {
  kernels::GetActivationKernels().geglu_f16_table(Table().v, gate, up, y, n);
}

void SwiGlu(const float* gate, const float* up, float* y, int64_t n) {
  // e^-g by the vector exp attention uses (within 2 ulp of std::exp; libm's
  // expf, one call per element, was 4% of a Llama 3.2 1B prefill), 256 at a
  // time in a buffer of ours, so the division loop cannot alias y.
  static const auto vexp = kernels::GetAttnTile().exp;
  constexpr int64_t kChunk = 256;
  alignas(64) float e[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    for (int64_t k = 0; k < m; ++k) e[k] = -gate[i0 + k];
    vexp(m, e, e);
    for (int64_t k = 0; k < m; ++k) e[k] = gate[i0 + k] / (1.0f + e[k]) * up[i0 + k];
    std::copy(e, e + m, y + i0);
  }
}

double LogSumExp(const float* x, int64_t n) {
  static const auto vexp = kernels::GetAttnTile().exp;
  // Eight lanes of max and of the sum, which the compiler keeps in vector
  // registers (a single running max or sum is a chain of dependent adds).
  constexpr int kLanes = 8;
  float lane_max[kLanes];
  std::fill(lane_max, lane_max + kLanes, x[0]);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane_max[j] = std::max(lane_max[j], x[i + j]);
  }
  float max = *std::max_element(lane_max, lane_max + kLanes);
  for (; i < n; ++i) max = std::max(max, x[i]);
  constexpr int64_t kChunk = 256;  // a multiple of kLanes
  alignas(64) float e[kChunk];
  double lane_sum[kLanes] = {};
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    for (int64_t k = 0; k < m; ++k) e[k] = x[i0 + k] - max;
    vexp(m, e, e);
    std::fill(e + m, e + (m + kLanes - 1) / kLanes * kLanes, 0.0f);
    for (int64_t k = 0; k < m; k += kLanes) {
      for (int j = 0; j < kLanes; ++j) lane_sum[j] += e[k + j];
    }
  }
  double sum = 0;
  for (double s : lane_sum) sum += s;
  return static_cast<double>(max) + std::log(sum);
}

void AddRowBias(float* y, const float* b, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) AddInPlace(y + r * n, b, n);
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void Scale(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace ellm::ops
