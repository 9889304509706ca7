// Internal to the packed GEMM kernels: what each instruction-set file offers,
// and the layout constants the packer and every kernel share. gemm_packed.cc
// builds the dispatch table from these; nothing else calls them.
#pragma once

#include "kernels/gemm_packed.h"

namespace ellm::kernels::internal {

// Q8_0 family: bytes of the scale table in front of the quants.
inline size_t PackedScaleBytes32(int64_t nb) {
  const size_t raw = static_cast<size_t>(nb) * kPackRows * 2;
  return (raw + kPackAlign - 1) / kPackAlign * kPackAlign;
}
inline constexpr size_t kPackedBlock32QuantBytes = 32 * kPackRows;  // 8 chunks

// Q4_K super-block: offsets inside one 1312-byte packed super-block.
inline constexpr size_t kQ4KPackedD = 0, kQ4KPackedDmin = 16, kQ4KPackedSc = 32, kQ4KPackedM = 160,
                        kQ4KPackedQ = 288, kQ4KPackedBytes = 1312;
// Q6_K super-block: offsets inside one 2208-byte packed super-block.
inline constexpr size_t kQ6KPackedD = 0, kQ6KPackedSc = 32, kQ6KPackedQ = 160,
                        kQ6KPackedBytes = 2208;

GemmPackedFn RefGemmPacked(quant::TensorType type);   // gemm_packed_ref.cc
GemmPackedFn Avx2GemmPacked(quant::TensorType type);  // gemm_packed_avx2.cc
// gemm_packed_avx512.cc; null when the compiler could not build it.
GemmPackedFn Avx512VnniGemmPacked(quant::TensorType type);

}  // namespace ellm::kernels::internal
