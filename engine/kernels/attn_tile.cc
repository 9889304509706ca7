#include "kernels/attn_tile.h"

namespace ellm::kernels {

const AttnTileKernels& GetAttnTileAt(IsaLevel level) {
  if (level == IsaLevel::kScalar) return internal::kAttnTileRef;
  if (level < IsaLevel::kAvx512) return internal::kAttnTileAvx2;
  static const AttnTileKernels avx512 = [] {
    AttnTileKernels k = internal::kAttnTileAvx2;
    internal::UseAvx512AttnTile(&k);
    return k;
  }();
  return avx512;
}

const AttnTileKernels& GetAttnTile() {
  static const AttnTileKernels& chosen = GetAttnTileAt(HostCpu().Level());
  return chosen;
}

}  // namespace ellm::kernels
