#include "ops/elementwise.h"

#include <cmath>

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

void RopeNeox(float* x, int n_heads, int head_dim, int64_t pos, float base, float freq_scale) {
  const int half = head_dim / 2;
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(head_dim));
  float cos_cache[1024], sin_cache[1024];
  float theta = static_cast<float>(pos);
  for (int i = 0; i < half; ++i) {
    const float t = theta * freq_scale;
    cos_cache[i] = std::cos(t);
    sin_cache[i] = std::sin(t);
    theta *= theta_scale;
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * cos_cache[i] - x1 * sin_cache[i];
      v[i + half] = x0 * sin_cache[i] + x1 * cos_cache[i];
    }
  }
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
  // As ggml_vec_gelu_f32 with GGML_GELU_FP16: saturate outside [-10, 10],
  // else look up the f16-rounded input.
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return quant::Fp16ToFp32(Table().v[quant::Fp32ToFp16(x)]);
}

void GeGlu(const float* gate, const float* up, float* y, int64_t n) {
  const GeluTable& t = Table();
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    float a;
    if (g <= -10.0f) {
      a = 0.0f;
    } else if (g >= 10.0f) {
      a = g;
    } else {
      a = quant::Fp16ToFp32(t.v[quant::Fp32ToFp16(g)]);
    }
    y[i] = a * up[i];
  }
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void Scale(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace ellm::ops
