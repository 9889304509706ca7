#include "kernels/attn_tile.h"

namespace ellm::kernels {

const AttnTileKernels& GetAttnTileAt(IsaLevel level) {
  if (level == IsaLevel::kScalar) return internal::kAttnTileRef;
  // Without AMX the tile products are the references' (see attn_tile.h).
  static const AttnTileKernels avx2 = [] {
    AttnTileKernels k = internal::kAttnTileAvx2;
    k.scores_bf16_tiles = internal::kAttnTileRef.scores_bf16_tiles;
    k.accumulate_bf16_tiles = internal::kAttnTileRef.accumulate_bf16_tiles;
    return k;
  }();
  if (level < IsaLevel::kAvx512) return avx2;
  static const AttnTileKernels avx512 = [] {
    AttnTileKernels k = avx2;
    internal::UseAvx512AttnTile(&k);
    return k;
  }();
  if (level < IsaLevel::kAmx) return avx512;
  static const AttnTileKernels amx = [] {
    AttnTileKernels k = avx512;
    if (HostCpu().Level() >= IsaLevel::kAmx && HostCpu().amx_bf16) internal::UseAmxAttnTile(&k);
    return k;
  }();
  return amx;
}

const AttnTileKernels& GetAttnTile() {
  static const AttnTileKernels& chosen = GetAttnTileAt(HostCpu().Level());
  return chosen;
}

}  // namespace ellm::kernels
