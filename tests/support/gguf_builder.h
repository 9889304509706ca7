// Writes small synthetic GGUF files for tests: valid ones to start from, and
// hooks to corrupt them byte by byte. Not a general GGUF writer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ellm::testing {

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  GgufBuilder& U32(const std::string& key, uint32_t v);
  GgufBuilder& I32(const std::string& key, int32_t v);
  GgufBuilder& F32(const std::string& key, float v);
  GgufBuilder& Bool(const std::string& key, bool v);
  GgufBuilder& Str(const std::string& key, const std::string& v);
  GgufBuilder& StrArray(const std::string& key, const std::vector<std::string>& v);
  GgufBuilder& I32Array(const std::string& key, const std::vector<int32_t>& v);
  // A raw key-value: the caller provides the type id and encoded value bytes.
  GgufBuilder& Raw(const std::string& key, uint32_t type, const std::vector<uint8_t>& value);
  // A tensor whose data is `data` (placed at the next aligned offset, unless
  // `offset` >= 0 overrides what the info says).
  GgufBuilder& Tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                      std::vector<uint8_t> data, int64_t offset = -1);
  GgufBuilder& Alignment(uint32_t a) {
    alignment_ = a;
    return U32("general.alignment", a);
  }

  std::vector<uint8_t> Build() const;
  // Writes Build() to `path`; returns false on I/O error.
  bool WriteTo(const std::string& path) const;

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
    int64_t offset;
  };
  uint32_t version_;
  uint32_t alignment_ = 32;
  uint64_t n_kv_ = 0;
  std::vector<uint8_t> kv_bytes_;
  std::vector<T> tensors_;
};

void PutU32(std::vector<uint8_t>& b, uint32_t v);
void PutU64(std::vector<uint8_t>& b, uint64_t v);
void PutStr(std::vector<uint8_t>& b, const std::string& s);

}  // namespace ellm::testing
