#include "kernels/f16_vec.h"

#include "kernels/f16_vec_isa.h"

namespace ellm::kernels {

const F16VecKernels& GetF16VecAt(IsaLevel level) {
  return level == IsaLevel::kScalar ? internal::kF16VecRef : internal::kF16VecAvx2;
}

const F16VecKernels& GetF16Vec() {
  static const F16VecKernels& chosen = GetF16VecAt(HostCpu().Level());
  return chosen;
}

}  // namespace ellm::kernels
