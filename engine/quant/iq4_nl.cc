// Reference decode of IQ4_NL, element for element as ggml's
// dequantize_row_iq4_nl (d * value, one rounding).
#include "quant/iq4_nl.h"

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeIq4Nl(const BlockIq4Nl* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kIq4NlBlockElems; ++b, y += kIq4NlBlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4NlValues[x[b].qs[j] & 0x0f]);
      y[j + 16] = d * static_cast<float>(kIq4NlValues[x[b].qs[j] >> 4]);
    }
  }
}

}  // namespace ellm::quant
