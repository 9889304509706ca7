// Internal to f16_vec: each instruction-set file's kernels.
#pragma once

#include "kernels/f16_vec.h"

namespace ellm::kernels::internal {

extern const F16VecKernels kF16VecRef;   // f16_vec_ref.cc
extern const F16VecKernels kF16VecAvx2;  // f16_vec_avx2.cc

}  // namespace ellm::kernels::internal
