// GgufFile: a validated, memory-mapped GGUF file (versions 2 and 3).
//
// Open() maps the file and checks every byte of the header before returning:
// magic, version, every metadata value (all types, nested arrays), tensor
// infos (dims, shapes, overflow, types, alignment) and that each tensor's
// data lies inside the file. After a successful Open nothing read through
// this class can point outside the mapping. Tensors are views into the
// mapping; nothing is copied. Errors name the file, the key or tensor, and
// what was expected.
//
// Thread safety: immutable after Open; safe to read from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ellm/base/mapped_file.h"
#include "ellm/base/status.h"
#include "ellm/engine/tensor_type.h"

namespace ellm::gguf {

// GGUF metadata value types; an on-disk format (append-only).
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view ValueTypeName(ValueType t);

struct Value;

// An array value. Numeric and bool elements stay in the mapping (`raw`,
// little-endian, `count` elements); strings and nested arrays are indexed.
struct Array {
  ValueType elem_type = ValueType::kUint8;
  uint64_t count = 0;
  std::span<const uint8_t> raw;           // numeric/bool elements
  std::vector<std::string_view> strings;  // elem_type == kString
  std::vector<Value> arrays;              // elem_type == kArray
};

struct Value {
  ValueType type = ValueType::kUint8;
  uint64_t u = 0;  // unsigned integers
  int64_t i = 0;   // signed integers
  double f = 0;    // floats
  bool b = false;
  std::string_view str;                // kString (not NUL-terminated; points into the mapping)
  std::shared_ptr<const Array> array;  // kArray
};

struct KeyValue {
  std::string_view key;
  Value value;
};

constexpr int kMaxDims = 4;

struct TensorInfo {
  std::string_view name;
  int n_dims = 0;
  // ne[0] is the innermost (contiguous) dimension, as in GGML; unused dims are 1.
  int64_t ne[kMaxDims] = {1, 1, 1, 1};
  quant::TensorType type = quant::TensorType::kF32;
  uint64_t offset = 0;  // relative to the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // inside the mapping

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  std::string ShapeString() const;  // "[640, 262144]"
};

class GgufFile {
 public:
  static StatusOr<GgufFile> Open(const std::string& path);
  // Parses bytes already in memory (the fuzzer and tests); `name` stands in
  // for the path in messages. The caller keeps `bytes` alive.
  static StatusOr<GgufFile> Parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }
  // The whole file (mapped).
  std::span<const uint8_t> bytes() const { return bytes_; }

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  const Value* Find(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;

  // Typed accessors. Each fails with NOT_FOUND naming the key when absent
  // and INVALID_ARGUMENT naming both types when the stored type differs.
  // Integer getters accept any integer type whose value fits.
  StatusOr<uint64_t> GetUint(std::string_view key) const;
  StatusOr<int64_t> GetInt(std::string_view key) const;
  StatusOr<double> GetFloat(std::string_view key) const;  // f32 or f64
  StatusOr<bool> GetBool(std::string_view key) const;
  StatusOr<std::string_view> GetString(std::string_view key) const;
  StatusOr<const Array*> GetArray(std::string_view key, ValueType elem_type) const;

  // A human-readable rendering of a value (arrays abbreviated past `max_elems`).
  static std::string FormatValue(const Value& v, size_t max_elems = 8);

 private:
  GgufFile() = default;
  friend class Parser;

  std::optional<MappedFile> mapping_;
  std::string path_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace ellm::gguf
