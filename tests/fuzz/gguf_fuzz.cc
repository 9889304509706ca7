// libFuzzer target for the GGUF parser (GgufFile::Parse). Built only with
// -DELLM_FUZZ=ON and clang (tests/fuzz/CMakeLists.txt); run it with
// scripts/fuzz. Seeds: tests/engine/gguf_corpus/ (make_seeds.py).
//
// Parse promises that after success nothing it returns points outside the
// input; so for every file that parses we read every byte of every tensor
// and every metadata value (strings, raw array bytes, nested arrays) and
// render each value, letting ASan catch any view past the buffer. The input
// is copied into an exactly sized heap buffer so a read one byte past the
// end is a heap-buffer-overflow.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "ellm/engine/gguf.h"

namespace {

using ellm::gguf::Array;
using ellm::gguf::GgufFile;
using ellm::gguf::Value;
using ellm::gguf::ValueType;

uint64_t Touch(std::span<const uint8_t> bytes) {
  uint64_t sum = 0;
  for (uint8_t b : bytes) sum = sum * 31 + b;
  return sum;
}

uint64_t Touch(std::string_view s) {
  return Touch(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

uint64_t TouchValue(const Value& v) {
  uint64_t sum = v.u ^ static_cast<uint64_t>(v.i) ^ (v.b ? 1 : 0);
  if (v.type == ValueType::kString) sum += Touch(v.str);
  if (v.type == ValueType::kArray) {
    const Array& a = *v.array;
    sum += Touch(a.raw);
    for (std::string_view s : a.strings) sum += Touch(s);
    for (const Value& e : a.arrays) sum += TouchValue(e);
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);
  auto f = GgufFile::Parse(std::span<const uint8_t>(copy.data(), copy.size()), "fuzz.gguf");
  if (!f.ok()) return 0;
  uint64_t sum = f->data_offset();
  for (const auto& kv : f->metadata()) {
    sum += Touch(kv.key) + TouchValue(kv.value);
    sum += GgufFile::FormatValue(kv.value, 1 << 20).size();
    if (f->Find(kv.key) == nullptr) __builtin_trap();
  }
  for (const auto& t : f->tensors()) {
    sum += Touch(t.name) + Touch(std::span<const uint8_t>(t.data, t.n_bytes));
    if (f->FindTensor(t.name) == nullptr) __builtin_trap();
  }
  // Keep the reads from being optimised away.
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}
