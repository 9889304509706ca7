// The one table of tensor element formats ellm knows: GGML type ids as GGUF
// files store them, block geometry, and whether we can decode the format.
// Every format-specific file (engine/quant/<format>.h) registers against this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ellm::quant {

// Values are GGML's type ids as written in GGUF tensor infos; they are an
// on-disk format, so this list is append-only and ids are never reused.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

// One past the largest TensorType id: the size of every table indexed by a
// type id (traits, formats, kernel dispatch). Appending a type with a larger
// id means raising this; the traits table in quant/tensor_type.cc, which
// lists every type, fails to compile until it is.
inline constexpr size_t kMaxTypeId = static_cast<size_t>(TensorType::kMXFP4) + 1;

struct TypeTraits {
  TensorType type;
  std::string_view name;  // as llama.cpp prints it: "q4_K", "bf16", ...
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
  bool quantized;
};

// Traits of a type id read from a file; nullopt for ids GGML never assigned
// (or has retired), which a reader must reject.
std::optional<TypeTraits> TraitsOf(uint32_t type_id);
const TypeTraits& Traits(TensorType type);
inline std::string_view TypeName(TensorType t) { return Traits(t).name; }

// Bytes of one row of `n` elements. REQUIRES: n % block_elems == 0.
inline uint64_t RowBytes(const TypeTraits& t, uint64_t n) {
  return n / t.block_elems * t.block_bytes;
}

}  // namespace ellm::quant
