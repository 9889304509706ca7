// Shared by the AVX2 and AVX-512 AccumulateBf16Pairs (attn_tile.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace ellm::kernels {

// Weights p[2m] and p[2m + 1] as one bf16 pair, VDPBF16PS's operand: their
// top halves, p[2m] low; 0 for p[2m + 1] when it is past `keys`.
inline uint32_t WeightPair(const float* p, int m, int keys) {
  uint32_t lo, hi = 0;
  std::memcpy(&lo, p + 2 * m, 4);
  if (2 * m + 1 < keys) std::memcpy(&hi, p + 2 * m + 1, 4);
  return (lo >> 16) | (hi & 0xFFFF0000u);
}

}  // namespace ellm::kernels
