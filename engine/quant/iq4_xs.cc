// Reference decode of IQ4_XS, element for element as ggml's
// dequantize_row_iq4_xs: dl = d * (ls - 32), then dl * value (built with
// -ffp-contract=off; both products round).
#include "quant/iq4_xs.h"

#include "quant/fp16.h"
#include "quant/iq4_nl.h"
#include "quant/q8_k.h"

namespace ellm::quant {

void DequantizeIq4Xs(const BlockIq4Xs* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
      const float dl = d * static_cast<float>(Iq4XsScale(x[b], ib));
      const uint8_t* qs = x[b].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4NlValues[qs[j] & 0x0f]);
        y[j + 16] = dl * static_cast<float>(kIq4NlValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace ellm::quant
