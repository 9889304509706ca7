// The list of model families the engine runs. Adding a family: one spec
// file in this folder, one line here, one golden test.
#include "model/archs/archs.h"

namespace ellm::model {
namespace {

const std::vector<const ArchSpec*>& Registry() {
  static const std::vector<const ArchSpec*> kAll = {
      // clang-format off
      &Gemma3Spec(),
      &GraniteSpec(),
      &LlamaSpec(),
      &Phi3Spec(),
      &Qwen2Spec(),
      &Qwen3Spec(),
      // clang-format on
  };
  return kAll;
}

}  // namespace

const ArchSpec* FindArch(std::string_view arch) {
  for (const ArchSpec* spec : Registry()) {
    if (spec->name == arch) return spec;
  }
  return nullptr;
}

std::vector<std::string_view> KnownArchs() {
  std::vector<std::string_view> names;
  for (const ArchSpec* spec : Registry()) names.push_back(spec->name);
  return names;
}

}  // namespace ellm::model
