// Dispatch for vec_dot.h: a table indexed by (ISA level, weight type), filled
// once, on first use, from the per-level files.
#include "kernels/vec_dot.h"

#include <algorithm>
#include <array>

#include "kernels/vec_dot_isa.h"

namespace ellm::kernels {
namespace {

// No vec_dot kernel uses AMX: a level above VNNI reads VNNI's entries.
constexpr int kLevels = static_cast<int>(IsaLevel::kAvx512Vnni) + 1;

using Table = std::array<std::array<VecDotFn, quant::kMaxTypeId>, kLevels>;

Table BuildTable() {
  Table t{};
  for (uint32_t id = 0; id < quant::kMaxTypeId; ++id) {
    const auto traits = quant::TraitsOf(id);
    if (!traits.has_value()) continue;
    t[static_cast<int>(IsaLevel::kScalar)][id] = internal::RefVecDot(traits->type);
    t[static_cast<int>(IsaLevel::kAvx2)][id] = internal::Avx2VecDot(traits->type);
    // The AVX-512 kernels use VPDPBUSD, so plain AVX-512 falls back to AVX2.
    t[static_cast<int>(IsaLevel::kAvx512Vnni)][id] = internal::Avx512VecDot(traits->type);
  }
  return t;
}

const Table& GetTable() {
  static const Table table = BuildTable();
  return table;
}

}  // namespace

VecDotFn GetVecDotAt(quant::TensorType weight, IsaLevel level) {
  const uint32_t id = static_cast<uint32_t>(weight);
  if (id >= quant::kMaxTypeId) return nullptr;
  const Table& table = GetTable();
  for (int l = std::min(static_cast<int>(level), kLevels - 1); l >= 0; --l) {
    if (table[l][id] != nullptr) return table[l][id];
  }
  return nullptr;
}

VecDot4Fn GetVecDot4(quant::TensorType weight) {
  // The four-row kernel must come from the level GetVecDot resolves to, so
  // that both give the same bits.
  static const IsaLevel level = HostCpu().Level();
  if (level >= IsaLevel::kAvx512Vnni && internal::Avx512VecDot(weight) != nullptr) {
    return internal::Avx512VecDot4(weight);
  }
  return level >= IsaLevel::kAvx2 ? internal::Avx2VecDot4(weight) : nullptr;
}

VecDotFn GetVecDot(quant::TensorType weight) {
  static const IsaLevel level = HostCpu().Level();
  return GetVecDotAt(weight, level);
}

}  // namespace ellm::kernels
