// KvType names, as configs and command lines spell them.
#include <string>

#include "ellm/engine/engine.h"

namespace ellm {

std::string_view KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF16:
      return "f16";
    case KvType::kF32:
      return "f32";
    case KvType::kBF16:
      return "bf16";
    case KvType::kQ8_0:
      return "q8_0";
  }
  return "?";
}

StatusOr<KvType> ParseKvType(std::string_view name) {
  for (KvType t : {KvType::kF16, KvType::kF32, KvType::kBF16, KvType::kQ8_0}) {
    if (KvTypeName(t) == name) return t;
  }
  return InvalidArgumentError("unknown KV type '" + std::string(name) +
                              "' (expected f16, bf16, f32 or q8_0)");
}

}  // namespace ellm
