// IQ4_NL: blocks of 32 weights, x = d * kIq4NlValues[q] with a 4-bit index q
// into a fixed non-linear table (ggml block_iq4_nl, kvalues_iq4nl). The
// table is shared with IQ4_XS.
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kIq4NlBlockElems = 32;

// ggml-common.h kvalues_iq4nl: the value of each 4-bit index.
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

struct BlockIq4Nl {
  uint16_t d;      // f16 scale
  uint8_t qs[16];  // element j: low nibble of qs[j]; element j + 16: its high nibble
};
static_assert(sizeof(BlockIq4Nl) == 18);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeIq4Nl(const BlockIq4Nl* x, float* y, int64_t n);

}  // namespace ellm::quant
