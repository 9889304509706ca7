#include "gguf_builder.h"

#include <cstring>
#include <fstream>

namespace ellm::testing {

void PutU32(std::vector<uint8_t>& b, uint32_t v) {
  uint8_t x[4];
  std::memcpy(x, &v, 4);
  b.insert(b.end(), x, x + 4);
}
void PutU64(std::vector<uint8_t>& b, uint64_t v) {
  uint8_t x[8];
  std::memcpy(x, &v, 8);
  b.insert(b.end(), x, x + 8);
}
void PutStr(std::vector<uint8_t>& b, const std::string& s) {
  PutU64(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

GgufBuilder& GgufBuilder::Raw(const std::string& key, uint32_t type,
                              const std::vector<uint8_t>& value) {
  PutStr(kv_bytes_, key);
  PutU32(kv_bytes_, type);
  kv_bytes_.insert(kv_bytes_.end(), value.begin(), value.end());
  ++n_kv_;
  return *this;
}

GgufBuilder& GgufBuilder::U32(const std::string& key, uint32_t v) {
  std::vector<uint8_t> b;
  PutU32(b, v);
  return Raw(key, 4, b);
}
GgufBuilder& GgufBuilder::I32(const std::string& key, int32_t v) {
  std::vector<uint8_t> b;
  PutU32(b, static_cast<uint32_t>(v));
  return Raw(key, 5, b);
}
GgufBuilder& GgufBuilder::F32(const std::string& key, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  std::vector<uint8_t> b;
  PutU32(b, u);
  return Raw(key, 6, b);
}
GgufBuilder& GgufBuilder::Bool(const std::string& key, bool v) {
  return Raw(key, 7, {static_cast<uint8_t>(v)});
}
GgufBuilder& GgufBuilder::Str(const std::string& key, const std::string& v) {
  std::vector<uint8_t> b;
  PutStr(b, v);
  return Raw(key, 8, b);
}
GgufBuilder& GgufBuilder::StrArray(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> b;
  PutU32(b, 8);
  PutU64(b, v.size());
  for (const auto& s : v) PutStr(b, s);
  return Raw(key, 9, b);
}
GgufBuilder& GgufBuilder::I32Array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> b;
  PutU32(b, 5);
  PutU64(b, v.size());
  for (int32_t x : v) PutU32(b, static_cast<uint32_t>(x));
  return Raw(key, 9, b);
}

GgufBuilder& GgufBuilder::Tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                                 std::vector<uint8_t> data, int64_t offset) {
  tensors_.push_back({name, std::move(ne), type, std::move(data), offset});
  return *this;
}

std::vector<uint8_t> GgufBuilder::Build() const {
  std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
  PutU32(b, version_);
  PutU64(b, tensors_.size());
  PutU64(b, n_kv_);
  b.insert(b.end(), kv_bytes_.begin(), kv_bytes_.end());
  auto align = [this](uint64_t x) { return (x + alignment_ - 1) / alignment_ * alignment_; };
  uint64_t next = 0;
  std::vector<uint64_t> offsets;
  for (const auto& t : tensors_) {
    offsets.push_back(next);
    next = align(next + t.data.size());
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    PutStr(b, t.name);
    PutU32(b, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) PutU64(b, n);
    PutU32(b, t.type);
    PutU64(b, t.offset >= 0 ? static_cast<uint64_t>(t.offset) : offsets[i]);
  }
  if (!tensors_.empty()) {
    b.resize(align(b.size()), 0);
    uint64_t base = b.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      b.resize(base + offsets[i], 0);
      b.insert(b.end(), tensors_[i].data.begin(), tensors_[i].data.end());
    }
  }
  return b;
}

bool GgufBuilder::WriteTo(const std::string& path) const {
  auto bytes = Build();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace ellm::testing
