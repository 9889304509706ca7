// KvType and AttnScores names, as configs and command lines spell them.
#include <string>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/kv_types.h"

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

AttnScores ResolveAttnScores(AttnScores s) {
  if (s != AttnScores::kAuto) return s;
  return HostCpu().FastBf16Dot() ? AttnScores::kPairs : AttnScores::kF32;
}

AttnScores AttnScoresUsed(KvType kv_type, AttnScores s) {
  return kv_type == KvType::kBF16 ? ResolveAttnScores(s) : AttnScores::kF32;
}

std::string_view AttnScoresName(AttnScores s) {
  switch (s) {
    case AttnScores::kAuto:
      return "auto";
    case AttnScores::kPairs:
      return "pairs";
    case AttnScores::kF32:
      return "f32";
    case AttnScores::kTiles:
      return "tiles";
  }
  return "?";
}

StatusOr<AttnScores> ParseAttnScores(std::string_view name) {
  for (AttnScores s :
       {AttnScores::kAuto, AttnScores::kPairs, AttnScores::kF32, AttnScores::kTiles}) {
    if (AttnScoresName(s) == name) return s;
  }
  return InvalidArgumentError("unknown attention scores '" + std::string(name) +
                              "' (expected auto, pairs, f32 or tiles)");
}

}  // namespace ellm
