// Scalar conversions between float and the two 16-bit float formats GGUF
// stores: IEEE binary16 ("f16", ggml_half) and bfloat16 ("bf16").
//
// Portable bit manipulation, no intrinsics (those live in kernels/). The
// rounding matches what ggml does on x86: f32 -> f16 rounds to nearest even
// like F16C's VCVTPS2PH (and numpy's astype(float16)); f32 -> bf16 rounds to
// nearest even and quiets NaNs like ggml_compute_fp32_to_bf16. The widening
// conversions are exact.
#pragma once

#include <bit>
#include <cstdint>

namespace ellm::quant {

// Exact for every input, subnormals, infinities and NaNs included (NaN
// payloads are kept).
inline float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {  // inf or NaN
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {  // signed zero
    bits = sign;
  } else {        // subnormal: normalize into an f32 normal
    int e = 113;  // 127 - 15 + 1
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// Round to nearest, ties to even; overflow goes to infinity, NaN stays NaN
// (quieted).
inline uint16_t Fp32ToFp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) {  // >= 65520 rounds past the largest f16 (65504)
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // below 2^-14: f16 subnormal or zero
    // Align the implicit-1 mantissa so that one f16 subnormal ulp (2^-24) is
    // bit 0, rounding to nearest even on the bits shifted out.
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14 + (113 - exp)
    if (shift > 24) return sign;                          // < 2^-25: rounds to 0
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);  // q == 0x400 is the smallest normal
  }
  // Normal: rebias and round the 13 dropped bits; a carry out of the mantissa
  // correctly bumps the exponent.
  uint32_t r = abs - 0x38000000u;  // exponent 127 -> 15 bias
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

inline float Bf16ToFp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t Fp32ToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncate and force quiet
    return static_cast<uint16_t>((x >> 16) | 64u);
  }
  return static_cast<uint16_t>((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

}  // namespace ellm::quant
