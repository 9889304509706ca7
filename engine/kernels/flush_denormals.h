// Denormals as zeros for the f32 arithmetic of a scope (MXCSR's DAZ and FTZ
// bits, restored on exit): how VDPBF16PS computes whatever MXCSR says, so
// the AVX2 emulation of bf16 pair dot products and the additions around
// them give the instruction's bits (attn_tile.h, ScoresBf16).
#pragma once

#include <immintrin.h>

namespace ellm::kernels {

class FlushDenormalsScope {
 public:
  FlushDenormalsScope() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~FlushDenormalsScope() { _mm_setcsr(saved_); }
  FlushDenormalsScope(const FlushDenormalsScope&) = delete;
  FlushDenormalsScope& operator=(const FlushDenormalsScope&) = delete;

 private:
  static constexpr unsigned kFtz = 0x8000, kDaz = 0x0040;
  unsigned saved_;
};

}  // namespace ellm::kernels
