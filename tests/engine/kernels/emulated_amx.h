// The AMX kernel file built a second time, against our software model of
// the tile instructions (kernels/amx_emu.h) and SIMDe's AVX-512 (target
// ellm_kernels_emulated_amx in tests/CMakeLists.txt), its entry point
// renamed EmulatedAmxGemmPacked (and EmulatedUseAmxAttnTile): the AMX kernels' tests run on every
// machine, and on the real instructions where the CPU has AMX.
#pragma once

#include "kernels/attn_tile.h"
#include "kernels/gemm_packed.h"
#include "quant/quant.h"

namespace ellm::kernels::internal {

GemmPackedFn EmulatedAmxGemmPacked(quant::TensorType type);
// attn_tile_amx.cc's ScoresBf16Tiles and AccumulateBf16Tiles, emulated.
void EmulatedUseAmxAttnTile(AttnTileKernels* k);

}  // namespace ellm::kernels::internal
