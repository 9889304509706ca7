#include "kernels/activations.h"

namespace ellm::kernels {

const ActivationKernels& GetActivationKernelsAt(IsaLevel level) {
  return level == IsaLevel::kScalar ? internal::kActivationsRef : internal::kActivationsAvx2;
}

const ActivationKernels& GetActivationKernels() {
  static const ActivationKernels& chosen = GetActivationKernelsAt(HostCpu().Level());
  return chosen;
}

}  // namespace ellm::kernels
