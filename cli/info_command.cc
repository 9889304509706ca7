// ellm info: validate a GGUF file and print its metadata.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/gguf.h"
#include "flags.h"

namespace ellm::cli {
namespace {

nlohmann::json ToJson(const ellm::gguf::Value& v) {
  using ellm::gguf::ValueType;
  switch (v.type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      return v.u;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      return v.i;
    case ValueType::kFloat32:
    case ValueType::kFloat64:
      return v.f;
    case ValueType::kBool:
      return v.b;
    case ValueType::kString:
      return std::string(v.str);
    case ValueType::kArray:
      // Arrays can hold 262k tokens; report their shape, not their content.
      return {{"type", "array"},
              {"element_type", std::string(ellm::gguf::ValueTypeName(v.array->elem_type))},
              {"count", v.array->count}};
  }
  return nullptr;
}

}  // namespace

int Info(const Args& args) {
  auto flags = Flags::Parse(args, {}, {"json", "tensors"});
  if (!flags.ok()) {
    std::fprintf(stderr, "ellm info: %s\n", flags.status().message().c_str());
    return 2;
  }
  const bool json = flags->Has("json"), tensors = flags->Has("tensors");
  const std::string path = flags->positional().empty() ? "" : flags->positional().back();
  if (path.empty()) {
    std::fputs("usage: ellm info MODEL.gguf [--json] [--tensors]\n", stderr);
    return 2;
  }
  auto f = ellm::gguf::GgufFile::Open(path);
  if (!f.ok()) {
    std::fprintf(stderr, "ellm info: %s\n", f.status().ToString().c_str());
    return 1;
  }
  if (json) {
    nlohmann::json out;
    out["path"] = path;
    out["version"] = f->version();
    out["alignment"] = f->alignment();
    out["file_size"] = f->file_size();
    out["tensor_count"] = f->tensors().size();
    for (const auto& kv : f->metadata()) out["metadata"][std::string(kv.key)] = ToJson(kv.value);
    if (tensors) {
      for (const auto& t : f->tensors()) {
        out["tensors"].push_back({{"name", std::string(t.name)},
                                  {"type", std::string(ellm::quant::TypeName(t.type))},
                                  {"shape", std::vector<int64_t>(t.ne, t.ne + t.n_dims)},
                                  {"bytes", t.n_bytes}});
      }
    }
    const Status runs = Engine::CheckRuns(path);
    out["runs"] = runs.ok();
    if (!runs.ok()) out["runs_error"] = runs.message();
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%s: GGUF v%u, %zu metadata keys, %zu tensors, %llu bytes\n", path.c_str(),
              f->version(), f->metadata().size(), f->tensors().size(),
              static_cast<unsigned long long>(f->file_size()));
  for (const auto& kv : f->metadata()) {
    std::printf("  %-48.*s %s\n", static_cast<int>(kv.key.size()), kv.key.data(),
                ellm::gguf::GgufFile::FormatValue(kv.value).c_str());
  }
  if (tensors) {
    for (const auto& t : f->tensors()) {
      std::printf("  %-40.*s %-6s %s\n", static_cast<int>(t.name.size()), t.name.data(),
                  std::string(ellm::quant::TypeName(t.type)).c_str(), t.ShapeString().c_str());
    }
  }
  // The verdict, last: whether this build runs the file, or the first reason
  // it does not (the key or tensor, and why).
  const Status runs = Engine::CheckRuns(path);
  if (runs.ok()) {
    std::printf("runs: yes\n");
  } else {
    std::printf("runs: no \u2014 %s\n", runs.message().c_str());
  }
  return 0;
}

}  // namespace ellm::cli
