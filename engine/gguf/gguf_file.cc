// GGUF parsing and validation. Layout (little-endian), from the GGUF spec in
// ggml's docs/gguf.md:
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x { string key | u32 type | value }
//   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
//   padding to general.alignment | tensor data (offsets relative to here)
// A string is u64 length + bytes; an array is u32 elem type + u64 count + elems.
#include <cinttypes>
#include <cstring>
#include <limits>
#include <sstream>

#include "ellm/engine/gguf.h"

namespace ellm::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
// Bounds that no real model comes near; they keep hostile counts from
// turning into huge allocations before the end-of-file check can fail.
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kMaxKeyBytes = 1 << 16;

size_t ScalarSize(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kString:
    case ValueType::kArray:
      return 0;
  }
  return 0;
}

bool IsKnownType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kFloat64); }

}  // namespace

std::string_view ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

std::string TensorInfo::ShapeString() const {
  std::string s = "[";
  for (int d = 0; d < n_dims; ++d) {
    if (d) s += ", ";
    s += std::to_string(ne[d]);
  }
  return s + "]";
}

// Reads the header with a cursor that never passes the end of the buffer.
class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const std::string& name) : b_(bytes), name_(name) {}

  Status Run(GgufFile& f);

 private:
  Status Error(std::string what) const {
    return InvalidArgumentError("GGUF file '" + name_ + "': " + what);
  }
  Status Truncated(std::string_view what) const {
    return OutOfRangeError("GGUF file '" + name_ + "' is truncated: " + std::string(what) +
                           " at byte " + std::to_string(pos_) + " runs past the end (file size " +
                           std::to_string(b_.size()) + ")");
  }
  bool Has(uint64_t n) const { return n <= b_.size() - pos_; }

  template <typename T>
  Status Read(T& out, std::string_view what) {
    if (!Has(sizeof(T))) return Truncated(what);
    std::memcpy(&out, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }
  Status ReadString(std::string_view& out, std::string_view what) {
    uint64_t len = 0;
    ELLM_RETURN_IF_ERROR(Read(len, what));
    if (!Has(len)) {
      return OutOfRangeError("GGUF file '" + name_ + "': " + std::string(what) + " at byte " +
                             std::to_string(pos_ - 8) + " declares " + std::to_string(len) +
                             " bytes but only " + std::to_string(b_.size() - pos_) + " remain");
    }
    out = std::string_view(reinterpret_cast<const char*>(b_.data() + pos_), len);
    pos_ += len;
    return OkStatus();
  }
  Status ReadValue(ValueType type, Value& v, const std::string& key, int depth);
  Status ReadArray(Array& a, const std::string& key, int depth);
  Status ReadTensorInfo(TensorInfo& t, size_t index);

  std::span<const uint8_t> b_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

Status Parser::ReadValue(ValueType type, Value& v, const std::string& key, int depth) {
  v.type = type;
  switch (type) {
    case ValueType::kUint8: {
      uint8_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.u = x;
      break;
    }
    case ValueType::kInt8: {
      int8_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.i = x;
      break;
    }
    case ValueType::kUint16: {
      uint16_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.u = x;
      break;
    }
    case ValueType::kInt16: {
      int16_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.i = x;
      break;
    }
    case ValueType::kUint32: {
      uint32_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.u = x;
      break;
    }
    case ValueType::kInt32: {
      int32_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.i = x;
      break;
    }
    case ValueType::kUint64: {
      ELLM_RETURN_IF_ERROR(Read(v.u, key));
      break;
    }
    case ValueType::kInt64: {
      ELLM_RETURN_IF_ERROR(Read(v.i, key));
      break;
    }
    case ValueType::kFloat32: {
      float x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      v.f = x;
      break;
    }
    case ValueType::kFloat64: {
      ELLM_RETURN_IF_ERROR(Read(v.f, key));
      break;
    }
    case ValueType::kBool: {
      uint8_t x = 0;
      ELLM_RETURN_IF_ERROR(Read(x, key));
      if (x > 1)
        return Error("key '" + key + "': bool value " + std::to_string(x) + " is not 0 or 1");
      v.b = x != 0;
      break;
    }
    case ValueType::kString:
      ELLM_RETURN_IF_ERROR(ReadString(v.str, key));
      break;
    case ValueType::kArray: {
      auto a = std::make_shared<Array>();
      ELLM_RETURN_IF_ERROR(ReadArray(*a, key, depth + 1));
      v.array = std::move(a);
      break;
    }
  }
  return OkStatus();
}

Status Parser::ReadArray(Array& a, const std::string& key, int depth) {
  if (depth > kMaxArrayDepth) {
    return Error("key '" + key + "': arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  }
  uint32_t et = 0;
  ELLM_RETURN_IF_ERROR(Read(et, key));
  if (!IsKnownType(et)) {
    return Error("key '" + key + "': unknown array element type " + std::to_string(et));
  }
  a.elem_type = static_cast<ValueType>(et);
  ELLM_RETURN_IF_ERROR(Read(a.count, key));
  size_t scalar = ScalarSize(a.elem_type);
  if (scalar != 0) {
    if (a.count > (b_.size() - pos_) / scalar) {
      return OutOfRangeError("GGUF file '" + name_ + "': key '" + key + "' declares an array of " +
                             std::to_string(a.count) + " " +
                             std::string(ValueTypeName(a.elem_type)) + " values past the end");
    }
    a.raw = b_.subspan(pos_, a.count * scalar);
    if (a.elem_type == ValueType::kBool) {
      for (uint8_t x : a.raw) {
        if (x > 1) return Error("key '" + key + "': bool array element is not 0 or 1");
      }
    }
    pos_ += a.count * scalar;
    return OkStatus();
  }
  // Each string or nested array takes at least 8 bytes, so a count larger
  // than remaining/8 cannot be real: refuse it before reserving memory.
  if (a.count > (b_.size() - pos_) / 8) {
    return OutOfRangeError("GGUF file '" + name_ + "': key '" + key + "' declares " +
                           std::to_string(a.count) + " elements past the end of the file");
  }
  if (a.elem_type == ValueType::kString) {
    a.strings.resize(a.count);
    for (auto& s : a.strings) ELLM_RETURN_IF_ERROR(ReadString(s, key));
  } else {
    a.arrays.resize(a.count);
    for (auto& v : a.arrays) ELLM_RETURN_IF_ERROR(ReadValue(ValueType::kArray, v, key, depth));
  }
  return OkStatus();
}

Status Parser::ReadTensorInfo(TensorInfo& t, size_t index) {
  std::string where = "tensor #" + std::to_string(index);
  ELLM_RETURN_IF_ERROR(ReadString(t.name, where + " name"));
  where = "tensor '" + std::string(t.name) + "'";
  uint32_t n_dims = 0;
  ELLM_RETURN_IF_ERROR(Read(n_dims, where));
  if (n_dims == 0 || n_dims > kMaxDims) {
    return Error(where + " has " + std::to_string(n_dims) + " dimensions; expected 1 to " +
                 std::to_string(kMaxDims));
  }
  t.n_dims = static_cast<int>(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne = 0;
    ELLM_RETURN_IF_ERROR(Read(ne, where));
    if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(where + " dimension " + std::to_string(d) + " is " + std::to_string(ne) +
                   "; expected a positive size");
    }
    t.ne[d] = static_cast<int64_t>(ne);
  }
  // The element count must fit in int64 (GGML's own limit).
  int64_t total = 1;
  for (int64_t ne : t.ne) {
    if (__builtin_mul_overflow(total, ne, &total)) {
      return Error(where + " shape " + t.ShapeString() + " overflows 64-bit element counts");
    }
  }
  uint32_t type_id = 0;
  ELLM_RETURN_IF_ERROR(Read(type_id, where));
  auto traits = quant::TraitsOf(type_id);
  if (!traits) {
    return Error(where + " has unknown tensor type id " + std::to_string(type_id));
  }
  t.type = traits->type;
  if (t.ne[0] % traits->block_elems != 0) {
    return Error(where + " of type " + std::string(traits->name) + " has a row of " +
                 std::to_string(t.ne[0]) + " elements, not a multiple of its block size " +
                 std::to_string(traits->block_elems));
  }
  uint64_t rows = static_cast<uint64_t>(total / t.ne[0]);
  uint64_t row_bytes = quant::RowBytes(*traits, static_cast<uint64_t>(t.ne[0]));
  if (__builtin_mul_overflow(rows, row_bytes, &t.n_bytes)) {
    return Error(where + " shape " + t.ShapeString() + " overflows 64-bit byte counts");
  }
  ELLM_RETURN_IF_ERROR(Read(t.offset, where));
  return OkStatus();
}

Status Parser::Run(GgufFile& f) {
  uint32_t magic = 0;
  if (b_.size() < 4) return Truncated("magic");
  ELLM_RETURN_IF_ERROR(Read(magic, "magic"));
  if (magic != kMagic) {
    char m[5] = {};
    std::memcpy(m, &magic, 4);
    for (char& c : m)
      if (c && (c < 32 || c > 126)) c = '?';
    return Error("bad magic \"" + std::string(m, 4) +
                 "\"; expected \"GGUF\" (is this a GGUF model file?)");
  }
  ELLM_RETURN_IF_ERROR(Read(f.version_, "version"));
  if (f.version_ != 2 && f.version_ != 3) {
    if (f.version_ == 0x02000000 || f.version_ == 0x03000000) {
      return UnimplementedError("GGUF file '" + name_ +
                                "' is big-endian; only little-endian files are supported");
    }
    return UnimplementedError("GGUF file '" + name_ + "' has version " +
                              std::to_string(f.version_) + "; supported versions are 2 and 3");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  ELLM_RETURN_IF_ERROR(Read(n_tensors, "tensor count"));
  ELLM_RETURN_IF_ERROR(Read(n_kv, "metadata count"));
  // Every key-value pair takes at least 8+4 bytes, every tensor info at least 8+4+8+4+8.
  if (n_kv > (b_.size() - pos_) / 12 || n_tensors > (b_.size() - pos_) / 32) {
    return OutOfRangeError("GGUF file '" + name_ + "' declares " + std::to_string(n_kv) +
                           " metadata entries and " + std::to_string(n_tensors) +
                           " tensors, more than its " + std::to_string(b_.size()) +
                           " bytes can hold");
  }

  f.kvs_.resize(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue& kv = f.kvs_[i];
    ELLM_RETURN_IF_ERROR(ReadString(kv.key, "metadata key #" + std::to_string(i)));
    std::string key(kv.key);
    if (kv.key.empty() || kv.key.size() > kMaxKeyBytes) {
      return Error("metadata key #" + std::to_string(i) + " has length " +
                   std::to_string(kv.key.size()));
    }
    uint32_t type = 0;
    ELLM_RETURN_IF_ERROR(Read(type, key));
    if (!IsKnownType(type)) {
      return Error("key '" + key + "' has unknown value type " + std::to_string(type));
    }
    ELLM_RETURN_IF_ERROR(ReadValue(static_cast<ValueType>(type), kv.value, key, 0));
    if (!f.kv_index_.emplace(kv.key, i).second)
      return Error("duplicate metadata key '" + key + "'");
  }

  if (const Value* a = f.Find("general.alignment")) {
    if (a->type != ValueType::kUint32) {
      return Error("key 'general.alignment' has type " + std::string(ValueTypeName(a->type)) +
                   "; expected uint32");
    }
    if (a->u == 0 || (a->u & (a->u - 1)) != 0) {
      return Error("key 'general.alignment' is " + std::to_string(a->u) +
                   "; expected a power of two");
    }
    f.alignment_ = static_cast<uint32_t>(a->u);
  }

  f.tensors_.resize(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    ELLM_RETURN_IF_ERROR(ReadTensorInfo(f.tensors_[i], i));
    if (!f.tensor_index_.emplace(f.tensors_[i].name, i).second) {
      return Error("duplicate tensor '" + std::string(f.tensors_[i].name) + "'");
    }
  }

  uint64_t data = (pos_ + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  if (n_tensors > 0 && data > b_.size()) return Truncated("tensor data section");
  f.data_offset_ = data;
  uint64_t data_size = b_.size() - std::min<uint64_t>(data, b_.size());
  for (TensorInfo& t : f.tensors_) {
    std::string where = "tensor '" + std::string(t.name) + "'";
    if (t.offset % f.alignment_ != 0) {
      return Error(where + " data offset " + std::to_string(t.offset) +
                   " is not a multiple of the alignment " + std::to_string(f.alignment_));
    }
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      return OutOfRangeError("GGUF file '" + name_ + "': " + where + " (" +
                             std::string(quant::TypeName(t.type)) + " " + t.ShapeString() + ", " +
                             std::to_string(t.n_bytes) + " bytes at data offset " +
                             std::to_string(t.offset) + ") lies outside the file's " +
                             std::to_string(data_size) + " bytes of tensor data");
    }
    t.data = b_.data() + data + t.offset;
  }
  return OkStatus();
}

StatusOr<GgufFile> GgufFile::Parse(std::span<const uint8_t> bytes, std::string name) {
  GgufFile f;
  f.path_ = std::move(name);
  f.bytes_ = bytes;
  Parser p(bytes, f.path_);
  ELLM_RETURN_IF_ERROR(p.Run(f));
  return f;
}

StatusOr<GgufFile> GgufFile::Open(const std::string& path) {
  auto mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status().WithContext("cannot read model");
  std::span<const uint8_t> bytes = mapped->bytes();
  ELLM_ASSIGN_OR_RETURN(GgufFile f, Parse(bytes, path));
  f.mapping_ = std::move(mapped).value();
  return f;
}

const Value* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status Missing(const std::string& path, std::string_view key) {
  return NotFoundError("GGUF file '" + path + "' has no metadata key '" + std::string(key) + "'");
}
Status WrongType(const std::string& path, std::string_view key, ValueType got,
                 std::string_view want) {
  return InvalidArgumentError("GGUF file '" + path + "': key '" + std::string(key) + "' has type " +
                              std::string(ValueTypeName(got)) + "; expected " + std::string(want));
}
bool IsUnsigned(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 ||
         t == ValueType::kUint64;
}
bool IsSigned(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 ||
         t == ValueType::kInt64;
}

}  // namespace

StatusOr<uint64_t> GgufFile::GetUint(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(path_, key);
  if (IsUnsigned(v->type)) return v->u;
  if (IsSigned(v->type) && v->i >= 0) return static_cast<uint64_t>(v->i);
  return WrongType(path_, key, v->type, "a non-negative integer");
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(path_, key);
  if (IsSigned(v->type)) return v->i;
  if (IsUnsigned(v->type) && v->u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(v->u);
  }
  return WrongType(path_, key, v->type, "an integer");
}

StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(path_, key);
  if (v->type == ValueType::kFloat32 || v->type == ValueType::kFloat64) return v->f;
  return WrongType(path_, key, v->type, "float32 or float64");
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(path_, key);
  if (v->type == ValueType::kBool) return v->b;
  return WrongType(path_, key, v->type, "bool");
}

StatusOr<std::string_view> GgufFile::GetString(std::string_view key) const {
  const Value* v = Find(key);
  if (!v) return Missing(path_, key);
  if (v->type == ValueType::kString) return v->str;
  return WrongType(path_, key, v->type, "string");
}

StatusOr<const Array*> GgufFile::GetArray(std::string_view key, ValueType elem_type) const {
  const Value* v = Find(key);
  if (!v) return Missing(path_, key);
  std::string want = "array of " + std::string(ValueTypeName(elem_type));
  if (v->type != ValueType::kArray) return WrongType(path_, key, v->type, want);
  if (v->array->elem_type != elem_type) {
    return InvalidArgumentError(
        "GGUF file '" + path_ + "': key '" + std::string(key) + "' is an array of " +
        std::string(ValueTypeName(v->array->elem_type)) + "; expected " + want);
  }
  return v->array.get();
}

std::string GgufFile::FormatValue(const Value& v, size_t max_elems) {
  std::ostringstream os;
  switch (v.type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      os << v.u;
      break;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      os << v.i;
      break;
    case ValueType::kFloat32:
    case ValueType::kFloat64:
      os << v.f;
      break;
    case ValueType::kBool:
      os << (v.b ? "true" : "false");
      break;
    case ValueType::kString: {
      std::string_view s = v.str.substr(0, 120);
      os << '"';
      for (char c : s) {
        if (c == '\n')
          os << "\\n";
        else if (c == '"')
          os << "\\\"";
        else
          os << c;
      }
      os << (v.str.size() > s.size() ? "...\"" : "\"");
      break;
    }
    case ValueType::kArray: {
      const Array& a = *v.array;
      os << ValueTypeName(a.elem_type) << "[" << a.count << "] [";
      size_t n = std::min<uint64_t>(a.count, max_elems);
      for (size_t k = 0; k < n; ++k) {
        if (k) os << ", ";
        Value e;
        e.type = a.elem_type;
        if (a.elem_type == ValueType::kString) {
          e.str = a.strings[k];
        } else if (a.elem_type == ValueType::kArray) {
          e = a.arrays[k];
        } else {
          size_t sz = ScalarSize(a.elem_type);
          const uint8_t* p = a.raw.data() + k * sz;
          switch (a.elem_type) {
            case ValueType::kUint8:
              e.u = p[0];
              break;
            case ValueType::kInt8:
              e.i = static_cast<int8_t>(p[0]);
              break;
            case ValueType::kBool:
              e.b = p[0] != 0;
              break;
            case ValueType::kUint16: {
              uint16_t x;
              std::memcpy(&x, p, 2);
              e.u = x;
              break;
            }
            case ValueType::kInt16: {
              int16_t x;
              std::memcpy(&x, p, 2);
              e.i = x;
              break;
            }
            case ValueType::kUint32: {
              uint32_t x;
              std::memcpy(&x, p, 4);
              e.u = x;
              break;
            }
            case ValueType::kInt32: {
              int32_t x;
              std::memcpy(&x, p, 4);
              e.i = x;
              break;
            }
            case ValueType::kFloat32: {
              float x;
              std::memcpy(&x, p, 4);
              e.f = x;
              break;
            }
            case ValueType::kUint64:
              std::memcpy(&e.u, p, 8);
              break;
            case ValueType::kInt64:
              std::memcpy(&e.i, p, 8);
              break;
            case ValueType::kFloat64:
              std::memcpy(&e.f, p, 8);
              break;
            default:
              break;
          }
        }
        os << FormatValue(e, max_elems);
      }
      if (a.count > n) os << ", ...";
      os << "]";
      break;
    }
  }
  return os.str();
}

}  // namespace ellm::gguf
