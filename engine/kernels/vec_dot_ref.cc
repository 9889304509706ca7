// Scalar reference dot products: the truth the SIMD kernels are tested
// against. Each follows ggml's ggml_vec_dot_<w>_<a>_generic: exact integer
// sums inside a block, one float multiply-add per block (per group of mins
// for the affine formats) across blocks, in ggml's operand order. The sum over
// blocks is sequential here, where ggml's generic K-quant code keeps 8 partial
// sums; that only moves float rounding, which the tests bound.
// Built with -ffp-contract=off so each multiply and add rounds as written.
#include <cstring>

#include "kernels/vec_dot_isa.h"
#include "quant/fp16.h"
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

namespace ellm::kernels::internal {
namespace {

using namespace ellm::quant;  // NOLINT(build/namespaces): block types and fp16 helpers

// ggml sums plain-float dot products in double (ggml_float) on its scalar path.
float DotF32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

float DotF16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(Fp16ToFp32(x[i]) * Fp16ToFp32(y[i]));
  return static_cast<float>(sum);
}

float DotBF16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(Bf16ToFp32(x[i]) * Bf16ToFp32(y[i]));
  return static_cast<float>(sum);
}

float DotQ8_0(int64_t n, const void* w, const void* a) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += x[b].qs[j] * y[b].qs[j];
    sum += static_cast<float>(sumi) * (Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d));
  }
  return sum;
}

float DotQ4_0(int64_t n, const void* w, const void* a) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j];
      sumi += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
    }
    sum += static_cast<float>(sumi) * Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d);
  }
  return sum;
}

// The 32 five-bit values of a Q5_0/Q5_1 block, without the Q5_0 offset.
void Unpack5(const uint8_t qs[16], const uint8_t qh_bytes[4], int out[32]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  for (int j = 0; j < 16; ++j) {
    out[j] = (qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
    out[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

float DotQ5_0(int64_t n, const void* w, const void* a) {
  const BlockQ5_0* x = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int q[32];
    Unpack5(x[b].qs, x[b].qh, q);
    int sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += (q[j] - 16) * y[b].qs[j];
    sum += (Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d)) * static_cast<float>(sumi);
  }
  return sum;
}

float DotQ4_1(int64_t n, const void* w, const void* a) {
  const BlockQ4_1* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += (x[b].qs[j] & 0x0f) * y[b].qs[j];
      sumi += (x[b].qs[j] >> 4) * y[b].qs[j + 16];
    }
    sum += (Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d)) * static_cast<float>(sumi) +
           Fp16ToFp32(x[b].m) * Fp16ToFp32(y[b].s);
  }
  return sum;
}

float DotQ5_1(int64_t n, const void* w, const void* a) {
  const BlockQ5_1* x = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int q[32];
    Unpack5(x[b].qs, x[b].qh, q);
    int sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += q[j] * y[b].qs[j];
    sum += (Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d)) * static_cast<float>(sumi) +
           Fp16ToFp32(x[b].m) * Fp16ToFp32(y[b].s);
  }
  return sum;
}

float DotQ2_K(int64_t n, const void* w, const void* a) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    int isum = 0, summs = 0;
    for (int g = 0; g < 16; ++g) {
      const int h = g / 8, j = (g / 2) % 4, l0 = (g % 2) * 16;
      int isuml = 0;
      for (int l = l0; l < l0 + 16; ++l) {
        isuml += y[b].qs[16 * g + l - l0] * ((x[b].qs[32 * h + l] >> (2 * j)) & 3);
      }
      isum += (x[b].scales[g] & 0x0f) * isuml;
      summs += y[b].bsums[g] * (x[b].scales[g] >> 4);
    }
    const float dall = y[b].d * Fp16ToFp32(x[b].d);
    const float dmin = y[b].d * Fp16ToFp32(x[b].dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float DotQ3_K(int64_t n, const void* w, const void* a) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    int8_t sc[16];
    UnpackQ3_KScales(x[b].scales, sc);
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      const int h = g / 8, j = (g / 2) % 4, l0 = (g % 2) * 16;
      int isuml = 0;
      for (int l = l0; l < l0 + 16; ++l) {
        int q = (x[b].qs[32 * h + l] >> (2 * j)) & 3;
        if ((x[b].hmask[l] & (1u << (4 * h + j))) == 0) q -= 4;
        isuml += q * y[b].qs[16 * g + l - l0];
      }
      isum += sc[g] * isuml;
    }
    sum += (Fp16ToFp32(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

// Q4_K and Q5_K share everything but the fifth bit.
template <typename Block, bool kFiveBit>
float DotK4(int64_t n, const void* w, const void* a) {
  const Block* x = static_cast<const Block*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    uint8_t sc[8], m[8];
    UnpackK4Scales(x[b].scales, sc, m);
    int isum = 0, summs = 0;
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = x[b].qs + 32 * (g / 2);
      const int shift = 4 * (g % 2);
      int isuml = 0;
      for (int l = 0; l < 32; ++l) {
        int v = (q[l] >> shift) & 0x0f;
        if constexpr (kFiveBit) v |= ((x[b].qh[l] >> g) & 1) << 4;
        isuml += v * y[b].qs[32 * g + l];
      }
      isum += sc[g] * isuml;
      summs += m[g] * (y[b].bsums[2 * g] + y[b].bsums[2 * g + 1]);
    }
    const float d = Fp16ToFp32(x[b].d) * y[b].d;
    const float dmin = Fp16ToFp32(x[b].dmin) * y[b].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float DotQ6_K(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int isuml = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) {
        const int h = e / 128, k = (e / 32) % 4, l = e % 32;
        const int low = (x[b].ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
        const int high = (x[b].qh[32 * h + l] >> (2 * k)) & 3;
        isuml += ((low | (high << 4)) - 32) * y[b].qs[e];
      }
      isum += x[b].scales[g] * isuml;
    }
    sum += (Fp16ToFp32(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

// IQ4_NL against Q8_0: Q4_0 with the table's values for q - 8, scaled as
// ggml's (y.d * x.d) * sumi.
float DotIq4Nl(int64_t n, const void* w, const void* a) {
  const BlockIq4Nl* x = static_cast<const BlockIq4Nl*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += kIq4NlValues[x[b].qs[j] & 0x0f] * y[b].qs[j];
      sumi += kIq4NlValues[x[b].qs[j] >> 4] * y[b].qs[j + 16];
    }
    sum += (Fp16ToFp32(y[b].d) * Fp16ToFp32(x[b].d)) * static_cast<float>(sumi);
  }
  return sum;
}

// IQ4_XS against Q8_K. ggml's generic code scales each 32-element sub-block
// in float; its AVX2 kernel, like this one, sums (ls - 32) * sumi over the
// super-block in integers (|isum| < 8 * 32 * 32 * 127 * 127 < 2^31) and
// multiplies once by d * y.d.
float DotIq4Xs(int64_t n, const void* w, const void* a) {
  const BlockIq4Xs* x = static_cast<const BlockIq4Xs*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    int isum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = x[b].qs + 16 * ib;
      const int8_t* q8 = y[b].qs + 32 * ib;
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        sumi += kIq4NlValues[qs[j] & 0x0f] * q8[j];
        sumi += kIq4NlValues[qs[j] >> 4] * q8[j + 16];
      }
      isum += Iq4XsScale(x[b], ib) * sumi;
    }
    sum += (Fp16ToFp32(x[b].d) * y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace

VecDotFn RefVecDot(quant::TensorType weight) {
  using T = quant::TensorType;
  switch (weight) {
    case T::kF32:
      return DotF32;
    case T::kF16:
      return DotF16;
    case T::kBF16:
      return DotBF16;
    case T::kQ8_0:
      return DotQ8_0;
    case T::kQ4_0:
      return DotQ4_0;
    case T::kQ5_0:
      return DotQ5_0;
    case T::kQ4_1:
      return DotQ4_1;
    case T::kQ5_1:
      return DotQ5_1;
    case T::kQ2_K:
      return DotQ2_K;
    case T::kQ3_K:
      return DotQ3_K;
    case T::kQ4_K:
      return DotK4<BlockQ4_K, false>;
    case T::kQ5_K:
      return DotK4<BlockQ5_K, true>;
    case T::kQ6_K:
      return DotQ6_K;
    case T::kIQ4_NL:
      return DotIq4Nl;
    case T::kIQ4_XS:
      return DotIq4Xs;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal
