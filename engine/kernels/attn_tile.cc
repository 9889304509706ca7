#include "kernels/attn_tile.h"

namespace ellm::kernels {

const AttnTileKernels& GetAttnTileAt(IsaLevel level) {
  return level == IsaLevel::kScalar ? internal::kAttnTileRef : internal::kAttnTileAvx2;
}

const AttnTileKernels& GetAttnTile() {
  static const AttnTileKernels& chosen = GetAttnTileAt(HostCpu().Level());
  return chosen;
}

}  // namespace ellm::kernels
