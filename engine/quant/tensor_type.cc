#include "ellm/engine/tensor_type.h"

#include <array>
#include <cstdlib>

namespace ellm::quant {
namespace {

// Geometry from ggml's block structs (ggml-common.h): e.g. Q4_K is
// d, dmin (2 x f16) + 12 bytes of 6-bit scales + 128 bytes of nibbles = 144.
constexpr TypeTraits kTable[] = {
    {TensorType::kF32, "f32", 1, 4, false},
    {TensorType::kF16, "f16", 1, 2, false},
    {TensorType::kQ4_0, "q4_0", 32, 18, true},
    {TensorType::kQ4_1, "q4_1", 32, 20, true},
    {TensorType::kQ5_0, "q5_0", 32, 22, true},
    {TensorType::kQ5_1, "q5_1", 32, 24, true},
    {TensorType::kQ8_0, "q8_0", 32, 34, true},
    {TensorType::kQ8_1, "q8_1", 32, 36, true},
    {TensorType::kQ2_K, "q2_K", 256, 84, true},
    {TensorType::kQ3_K, "q3_K", 256, 110, true},
    {TensorType::kQ4_K, "q4_K", 256, 144, true},
    {TensorType::kQ5_K, "q5_K", 256, 176, true},
    {TensorType::kQ6_K, "q6_K", 256, 210, true},
    {TensorType::kQ8_K, "q8_K", 256, 292, true},
    {TensorType::kIQ2_XXS, "iq2_xxs", 256, 66, true},
    {TensorType::kIQ2_XS, "iq2_xs", 256, 74, true},
    {TensorType::kIQ3_XXS, "iq3_xxs", 256, 98, true},
    {TensorType::kIQ1_S, "iq1_s", 256, 50, true},
    {TensorType::kIQ4_NL, "iq4_nl", 32, 18, true},
    {TensorType::kIQ3_S, "iq3_s", 256, 110, true},
    {TensorType::kIQ2_S, "iq2_s", 256, 82, true},
    {TensorType::kIQ4_XS, "iq4_xs", 256, 136, true},
    {TensorType::kI8, "i8", 1, 1, false},
    {TensorType::kI16, "i16", 1, 2, false},
    {TensorType::kI32, "i32", 1, 4, false},
    {TensorType::kI64, "i64", 1, 8, false},
    {TensorType::kF64, "f64", 1, 8, false},
    {TensorType::kIQ1_M, "iq1_m", 256, 56, true},
    {TensorType::kBF16, "bf16", 1, 2, false},
    {TensorType::kTQ1_0, "tq1_0", 256, 54, true},
    {TensorType::kTQ2_0, "tq2_0", 256, 66, true},
    {TensorType::kMXFP4, "mxfp4", 32, 17, true},
};

constexpr bool AllBelowMaxTypeId() {
  for (const TypeTraits& t : kTable) {
    if (static_cast<size_t>(t.type) >= kMaxTypeId) return false;
  }
  return true;
}
static_assert(AllBelowMaxTypeId(), "raise kMaxTypeId (tensor_type.h) above every TensorType id");

constexpr std::array<int, kMaxTypeId> BuildIndex() {
  std::array<int, kMaxTypeId> index{};
  for (auto& i : index) i = -1;
  for (size_t i = 0; i < std::size(kTable); ++i) {
    index[static_cast<uint32_t>(kTable[i].type)] = static_cast<int>(i);
  }
  return index;
}
constexpr std::array<int, kMaxTypeId> kIndex = BuildIndex();

}  // namespace

std::optional<TypeTraits> TraitsOf(uint32_t type_id) {
  if (type_id >= kMaxTypeId || kIndex[type_id] < 0) return std::nullopt;
  return kTable[kIndex[type_id]];
}

const TypeTraits& Traits(TensorType type) {
  uint32_t id = static_cast<uint32_t>(type);
  if (id >= kMaxTypeId || kIndex[id] < 0) std::abort();  // not a TensorType we declared
  return kTable[kIndex[id]];
}

}  // namespace ellm::quant
