// Scalar references for attn_tile.h: the truth the SIMD versions are tested
// against. Products are added with an explicit fma, so whether the compiler
// contracts them cannot differ between the f32 and the half-input versions.
#include <cmath>
#include <cstring>

#include "kernels/attn_tile.h"
#include "quant/fp16.h"
#include "quant/q8_0.h"

namespace ellm::kernels::internal {
namespace {

float Widen(float x) { return x; }
float WidenF16(uint16_t h) { return quant::Fp16ToFp32(h); }
float WidenBf16(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T, float (*W)(T)>
void ScoresRef(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
               float* s, int64_t ss) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < keys; ++j) {
      float sum = 0.0f;
      for (int d = 0; d < dim; ++d) sum = std::fma(q[r * qs + d], W(k[j * ks + d]), sum);
      s[r * ss + j] = sum;
    }
  }
}

// The fused (half-input) entries: the prefetch hint is ignored here.
template <class T, float (*W)(T)>
void ScoresHalfRef(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
                   float* s, int64_t ss, const void*, int64_t) {
  ScoresRef<T, W>(rows, keys, dim, q, qs, k, ks, s, ss);
}

// ScoresBf16 (attn_tile.h): VDPBF16PS's arithmetic written out, with its
// denormal flushing explicit (this file runs under the caller's MXCSR).
float Flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
float TopHalf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits &= 0xFFFF0000u;
  std::memcpy(&x, &bits, 4);
  return Flush(x);
}
// One flushed fma of a q value (taken as bf16) and a stored bf16 k value.
float PairStep(float q, uint16_t k, float acc) {
  return Flush(std::fma(TopHalf(q), Flush(WidenBf16(k)), acc));
}

void ScoresBf16Ref(int rows, int keys, int dim, const float* q, int64_t qs, const uint16_t* k,
                   int64_t ks, float* s, int64_t ss, const void*, int64_t) {
  const int d16 = dim & ~15;
  for (int r = 0; r < rows; ++r) {
    const float* qr = q + r * qs;
    for (int j = 0; j < keys; ++j) {
      const uint16_t* kj = k + j * ks;
      float lane[8] = {};
      for (int c = 0; c < d16; c += 16) {
        for (int i = 0; i < 8; ++i) {
          const int d = c + 2 * i;
          lane[i] = PairStep(qr[d], kj[d], PairStep(qr[d + 1], kj[d + 1], lane[i]));
        }
      }
      float sum = Flush(Flush(Flush(lane[0] + lane[1]) + Flush(lane[2] + lane[3])) +
                        Flush(Flush(lane[4] + lane[5]) + Flush(lane[6] + lane[7])));
      if (d16 < dim) {
        float tail = 0.0f;
        for (int d = d16; d < dim; ++d) tail = PairStep(qr[d], kj[d], tail);
        sum = Flush(sum + tail);
      }
      s[r * ss + j] = sum;
    }
  }
}

void InterleaveBf16PairsRef(int keys, int dim, const uint16_t* v, int64_t vs, uint32_t* vp,
                            const void*, int64_t) {
  for (int m = 0; 2 * m < keys; ++m) {
    for (int d = 0; d < dim; ++d) {
      const uint32_t odd = 2 * m + 1 < keys ? v[(2 * m + 1) * vs + d] : 0u;
      vp[int64_t{m} * dim + d] = v[2 * m * vs + d] | odd << 16;
    }
  }
}

void AccumulateBf16PairsRef(int rows, int keys, int dim, const float* p, int64_t ps,
                            const uint32_t* vp, float* o, int64_t os) {
  for (int r = 0; r < rows; ++r) {
    for (int d = 0; d < dim; ++d) {
      float acc = Flush(o[r * os + d]);
      for (int m = 0; 2 * m < keys; ++m) {
        const uint32_t pair = vp[int64_t{m} * dim + d];
        const float w_odd = 2 * m + 1 < keys ? p[r * ps + 2 * m + 1] : 0.0f;
        acc = PairStep(w_odd, static_cast<uint16_t>(pair >> 16), acc);
        acc = PairStep(p[r * ps + 2 * m], static_cast<uint16_t>(pair & 0xFFFFu), acc);
      }
      o[r * os + d] = acc;
    }
  }
}

// ScoresBf16Tiles / AccumulateBf16Tiles (attn_tile.h): TDPBF16PS's
// arithmetic per output, chunk by chunk, with its flushing explicit.
constexpr int kTileChunk = 32;  // elements of a tile row: 64 bytes of bf16
float FlushedAdd(float a, float b) { return Flush(Flush(a) + Flush(b)); }

void ScoresBf16TilesRef(int rows, int keys, int dim, const float* q, int64_t qs, const uint16_t* k,
                        int64_t ks, float* s, int64_t ss, const void*, int64_t) {
  for (int r = 0; r < rows; ++r) {
    const float* qr = q + r * qs;
    for (int j = 0; j < keys; ++j) {
      const uint16_t* kj = k + j * ks;
      float acc = 0.0f;
      for (int c = 0; c < dim; c += kTileChunk) {
        float even = 0.0f, odd = 0.0f;
        for (int d = c; d < c + kTileChunk; d += 2) {
          even = PairStep(d < dim ? qr[d] : 0.0f, d < dim ? kj[d] : 0, even);
          odd = PairStep(d + 1 < dim ? qr[d + 1] : 0.0f, d + 1 < dim ? kj[d + 1] : 0, odd);
        }
        acc = FlushedAdd(acc, FlushedAdd(even, odd));
      }
      s[r * ss + j] = acc;
    }
  }
}

void AccumulateBf16TilesRef(int rows, int keys, int dim, const float* p, int64_t ps,
                            const uint32_t* vp, float* o, int64_t os) {
  const int pairs = (keys + 1) / 2;
  for (int r = 0; r < rows; ++r) {
    const float* pr = p + r * ps;
    for (int d = 0; d < dim; ++d) {
      float acc = o[r * os + d];
      for (int m0 = 0; m0 < pairs; m0 += kTileChunk / 2) {
        float even = 0.0f, odd = 0.0f;
        for (int m = m0; m < m0 + kTileChunk / 2; ++m) {
          const uint32_t pair = m < pairs ? vp[int64_t{m} * dim + d] : 0u;
          const float w_even = 2 * m < keys ? pr[2 * m] : 0.0f;
          const float w_odd = 2 * m + 1 < keys ? pr[2 * m + 1] : 0.0f;
          even = PairStep(w_even, static_cast<uint16_t>(pair & 0xFFFFu), even);
          odd = PairStep(w_odd, static_cast<uint16_t>(pair >> 16), odd);
        }
        acc = FlushedAdd(acc, FlushedAdd(even, odd));
      }
      o[r * os + d] = acc;
    }
  }
}

template <class T, float (*W)(T)>
void AccumulateRef(int rows, int keys, int dim, const float* p, int64_t ps, const T* v, int64_t vs,
                   float* o, int64_t os) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < keys; ++j) {
      const float w = p[r * ps + j];
      for (int d = 0; d < dim; ++d) o[r * os + d] = std::fma(w, W(v[j * vs + d]), o[r * os + d]);
    }
  }
}

template <class T, float (*W)(T)>
void AccumulateHalfRef(int rows, int keys, int dim, const float* p, int64_t ps, const T* v,
                       int64_t vs, float* o, int64_t os, const void*, int64_t) {
  AccumulateRef<T, W>(rows, keys, dim, p, ps, v, vs, o, os);
}

void ExpRef(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void F16ToF32Ref(int64_t n, const uint16_t* src, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = WidenF16(src[i]);
}

void Bf16ToF32Ref(int64_t n, const uint16_t* src, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = WidenBf16(src[i]);
}

void Q8_0ToF32Ref(int64_t n, const uint8_t* src, float* dst) {
  quant::DequantizeQ8_0(reinterpret_cast<const quant::BlockQ8_0*>(src), dst, n);
}

}  // namespace

const AttnTileKernels kAttnTileRef = {ScoresRef<float, Widen>,
                                      AccumulateRef<float, Widen>,
                                      ExpRef,
                                      F16ToF32Ref,
                                      Bf16ToF32Ref,
                                      ScoresHalfRef<uint16_t, WidenF16>,
                                      AccumulateHalfRef<uint16_t, WidenF16>,
                                      ScoresBf16Ref,
                                      AccumulateHalfRef<uint16_t, WidenBf16>,
                                      Q8_0ToF32Ref,
                                      InterleaveBf16PairsRef,
                                      AccumulateBf16PairsRef,
                                      ScoresHalfRef<uint16_t, WidenBf16>,
                                      ScoresBf16TilesRef,
                                      AccumulateBf16TilesRef};

}  // namespace ellm::kernels::internal
