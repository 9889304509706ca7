// Internal to the vec_dot kernels: what each instruction-set file offers.
// vec_dot.cc builds the dispatch table from these; nothing else calls them.
#pragma once

#include "kernels/vec_dot.h"

namespace ellm::kernels::internal {

// The kernel for `weight` at one level, or nullptr where that level has none.
VecDotFn RefVecDot(quant::TensorType weight);       // vec_dot_ref.cc
VecDotFn Avx2VecDot(quant::TensorType weight);      // vec_dot_avx2.cc
VecDot4Fn Avx2VecDot4(quant::TensorType weight);    // vec_dot_avx2.cc
VecDotFn Avx512VecDot(quant::TensorType weight);    // vec_dot_avx512.cc (VNNI)
VecDot4Fn Avx512VecDot4(quant::TensorType weight);  // vec_dot_avx512.cc (VNNI)

}  // namespace ellm::kernels::internal
