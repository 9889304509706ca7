#include "family_model_builder.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "ellm/engine/gguf.h"
#include "gguf_builder.h"
#include "quant/fp16.h"

namespace ellm::testing {
namespace {

using nlohmann::json;

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64 of seed + (i + 1) * golden: the recipe's word(seed, i).
uint64_t Word(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Checksum(const std::vector<uint8_t>& data) {
  uint64_t sum = 0;
  for (size_t j = 0; j < data.size(); ++j) sum += (uint64_t{data[j]} + 1) * Word(0, j);
  return sum;
}

struct TypeInfo {
  uint32_t ggml;
  int64_t block_elems;
  int64_t block_bytes;
  int64_t d_at = 0;  // the f16 scale's byte offset in a block
};

bool LookUpType(const std::string& name, TypeInfo* out) {
  if (name == "f32")
    *out = {0, 1, 4};
  else if (name == "f16")
    *out = {1, 1, 2};
  else if (name == "q4_0")
    *out = {2, 32, 18};
  else if (name == "q5_0")
    *out = {6, 32, 22};
  else if (name == "q8_0")
    *out = {8, 32, 34};
  else if (name == "q4_k")
    *out = {12, 256, 144};
  else if (name == "q6_k")
    *out = {14, 256, 210, 208};  // d after ql, qh and the int8 scales
  else
    return false;
  return true;
}

void PutU16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v & 0xff);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

// The tensor's bytes for `n` elements (see the generator in the script).
std::vector<uint8_t> TensorBytes(const json& t, const TypeInfo& type, int64_t n) {
  const uint64_t seed = std::stoull(t["seed"].get<std::string>());
  std::vector<uint8_t> out;
  if (type.block_elems == 1) {
    const double offset = t["offset"].get<double>(), amp = t["amp"].get<double>();
    out.resize(static_cast<size_t>(n * type.block_bytes));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = static_cast<int64_t>(Word(seed, static_cast<uint64_t>(i)) >> 53) - 1024;
      const float v = static_cast<float>(offset + static_cast<double>(k) * (amp / 1024.0));
      if (type.ggml == 0) {
        std::memcpy(out.data() + i * 4, &v, 4);
      } else {
        PutU16(out, static_cast<size_t>(i * 2), quant::Fp32ToFp16(v));
      }
    }
    return out;
  }
  const int64_t blocks = n / type.block_elems;
  out.resize(static_cast<size_t>(blocks * type.block_bytes));
  for (size_t j = 0; j < out.size(); ++j) {
    out[j] = static_cast<uint8_t>(Word(seed, j / 8) >> (8 * (j % 8)));
  }
  const uint16_t d = t["d"].get<uint16_t>();
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t at = static_cast<size_t>(b * type.block_bytes);
    if (type.ggml == 8) {
      for (int64_t q = 2; q < type.block_bytes; ++q) {
        const int v = out[at + q] % 255 - 127;
        out[at + q] = static_cast<uint8_t>(static_cast<int8_t>(v));
      }
    }
    PutU16(out, at + static_cast<size_t>(type.d_at), d);
    if (type.ggml == 12) PutU16(out, at + 2, t["dmin"].get<uint16_t>());
  }
  return out;
}

void PutRaw(std::vector<uint8_t>& b, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}

// A scalar metadata value's encoding (everything but strings and arrays).
std::vector<uint8_t> EncodeScalar(const gguf::Value& v) {
  std::vector<uint8_t> b;
  switch (v.type) {
    case gguf::ValueType::kUint8:
    case gguf::ValueType::kUint16:
    case gguf::ValueType::kUint32:
    case gguf::ValueType::kUint64: {
      const size_t n = v.type == gguf::ValueType::kUint8    ? 1
                       : v.type == gguf::ValueType::kUint16 ? 2
                       : v.type == gguf::ValueType::kUint32 ? 4
                                                            : 8;
      PutRaw(b, &v.u, n);  // little-endian: the low bytes first
      break;
    }
    case gguf::ValueType::kInt8:
    case gguf::ValueType::kInt16:
    case gguf::ValueType::kInt32:
    case gguf::ValueType::kInt64: {
      const size_t n = v.type == gguf::ValueType::kInt8    ? 1
                       : v.type == gguf::ValueType::kInt16 ? 2
                       : v.type == gguf::ValueType::kInt32 ? 4
                                                           : 8;
      PutRaw(b, &v.i, n);
      break;
    }
    case gguf::ValueType::kFloat32: {
      const float f = static_cast<float>(v.f);
      PutRaw(b, &f, 4);
      break;
    }
    case gguf::ValueType::kFloat64:
      PutRaw(b, &v.f, 8);
      break;
    case gguf::ValueType::kBool:
      b.push_back(v.b ? 1 : 0);
      break;
    default:
      break;
  }
  return b;
}

bool EncodeValue(const gguf::Value& v, std::vector<uint8_t>* out) {
  if (v.type == gguf::ValueType::kString) {
    PutStr(*out, std::string(v.str));
    return true;
  }
  if (v.type != gguf::ValueType::kArray) {
    std::vector<uint8_t> b = EncodeScalar(v);
    out->insert(out->end(), b.begin(), b.end());
    return true;
  }
  const gguf::Array& a = *v.array;
  PutU32(*out, static_cast<uint32_t>(a.elem_type));
  PutU64(*out, a.count);
  if (a.elem_type == gguf::ValueType::kString) {
    for (std::string_view s : a.strings) PutStr(*out, std::string(s));
    return true;
  }
  if (a.elem_type == gguf::ValueType::kArray) return false;  // not in tokenizer keys
  out->insert(out->end(), a.raw.begin(), a.raw.end());
  return true;
}

}  // namespace

BuiltFamilyModel BuildFamilyModel(const json& recipe, const std::string& vocab_path,
                                  const std::string& path, const FamilyModelDamage& damage) {
  BuiltFamilyModel result;
  GgufBuilder b;
  auto dropped = [&](const std::string& key) {
    return std::find(damage.drop_metadata.begin(), damage.drop_metadata.end(), key) !=
           damage.drop_metadata.end();
  };
  for (const json& kv : recipe["metadata"]) {
    const std::string key = kv[0], kind = kv[1];
    if (dropped(key)) continue;
    if (kind == "u32") {
      b.U32(key, kv[2].get<uint32_t>());
    } else if (kind == "f32") {
      b.F32(key, kv[2].get<float>());
    } else if (kind == "str") {
      b.Str(key, kv[2].get<std::string>());
    } else {
      result.error = "recipe: metadata kind '" + kind + "' of '" + key + "'";
      return result;
    }
  }
  auto vocab = gguf::GgufFile::Open(vocab_path);
  if (!vocab.ok()) {
    result.error = vocab.status().ToString();
    return result;
  }
  std::set<std::string> own;  // the recipe's keys win (e.g. tokenizer.chat_template)
  for (const json& kv : recipe["metadata"]) own.insert(kv[0].get<std::string>());
  for (const gguf::KeyValue& kv : vocab->metadata()) {
    if (kv.key.substr(0, 10) != "tokenizer." || dropped(std::string(kv.key)) ||
        own.count(std::string(kv.key)) > 0) {
      continue;
    }
    std::vector<uint8_t> bytes;
    if (!EncodeValue(kv.value, &bytes)) {
      result.error = "cannot copy nested array '" + std::string(kv.key) + "'";
      return result;
    }
    b.Raw(std::string(kv.key), static_cast<uint32_t>(kv.value.type), bytes);
  }
  for (const json& t : recipe["tensors"]) {
    const std::string name = t["name"];
    TypeInfo type;
    if (!LookUpType(t["type"], &type)) {
      result.error = "recipe: tensor type '" + t["type"].get<std::string>() + "'";
      return result;
    }
    std::vector<uint64_t> ne = t["ne"].get<std::vector<uint64_t>>();
    int64_t n = 1;
    for (uint64_t d : ne) n *= static_cast<int64_t>(d);
    std::vector<uint8_t> data = TensorBytes(t, type, n);
    result.checksums[name] = Checksum(data);
    if (name == damage.drop_tensor) continue;
    if (name == damage.reshape_tensor) {
      ne = damage.new_ne;
      int64_t m = 1;
      for (uint64_t d : ne) m *= static_cast<int64_t>(d);
      data.resize(static_cast<size_t>(m / type.block_elems * type.block_bytes));
    }
    b.Tensor(name, ne, type.ggml, std::move(data));
  }
  if (!b.WriteTo(path)) result.error = "cannot write " + path;
  return result;
}

}  // namespace ellm::testing
