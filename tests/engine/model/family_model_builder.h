// Rebuilds the small random-weight models of tests/reference/families/ from
// the recipes recorded there by scripts/reference/make_family_reference.py
// (which documents the generator; the two must agree byte for byte), with
// the tokenizer.* keys copied from the real vocabulary file.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ellm::testing {

// Ways to spoil a model, for the bad-file tests.
struct FamilyModelDamage {
  std::string drop_tensor;                 // left out of the file
  std::string reshape_tensor;              // written with `new_ne` instead
  std::vector<uint64_t> new_ne;            // (its data sized to match)
  std::vector<std::string> drop_metadata;  // keys left out
};

struct BuiltFamilyModel {
  std::string error;  // empty on success
  // Each tensor's checksum as the recipe defines it, by name.
  std::map<std::string, uint64_t> checksums;
};

// Writes the model of `recipe` to `path`; `vocab_path` is the GGUF whose
// tokenizer.* keys it copies.
BuiltFamilyModel BuildFamilyModel(const nlohmann::json& recipe, const std::string& vocab_path,
                                  const std::string& path, const FamilyModelDamage& damage = {});

}  // namespace ellm::testing
