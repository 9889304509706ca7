// The AVX-512 kernel files built a second time, against SIMDe's portable
// AVX-512 instead of the CPU's (target ellm_kernels_emulated_avx512 in
// tests/CMakeLists.txt; engine/kernels/avx512_intrin.h). Their entry points
// are renamed with an "Emulated" prefix so that they sit beside the engine's
// own: a test checks the hardware kernels where the CPU has AVX-512 and the
// emulated ones everywhere, with the same assertions.
#pragma once

#include "kernels/attn_tile.h"
#include "kernels/gemm_packed.h"
#include "kernels/vec_dot.h"
#include "quant/quant.h"

namespace ellm::kernels::internal {

GemmPackedFn EmulatedAvx512VnniGemmPacked(quant::TensorType type);
void EmulatedUseAvx512AttnTile(AttnTileKernels* k);
VecDotFn EmulatedAvx512VecDot(quant::TensorType weight);
VecDot4Fn EmulatedAvx512VecDot4(quant::TensorType weight);

// The AVX2 table with the emulated AVX-512 entries put in, as
// GetAttnTileAt(kAvx512) builds it from the hardware ones.
inline AttnTileKernels EmulatedAvx512AttnTile() {
  AttnTileKernels k = GetAttnTileAt(IsaLevel::kAvx2);
  EmulatedUseAvx512AttnTile(&k);
  return k;
}

}  // namespace ellm::kernels::internal
