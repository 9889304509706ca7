// ellm: the command-line front end. Each subcommand is a function here until
// it grows; they run the same libraries as the daemon, on local files.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/gguf.h"

namespace {

constexpr const char* kUsage =
    "usage: ellm <command> [options]\n"
    "commands:\n"
    "  info MODEL.gguf [--json] [--tensors]   validate a GGUF file and print its metadata\n"
    "  cpu                                    CPU features and the kernel level in use\n"
    "  version                                print the version\n";

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

int Info(const std::vector<std::string>& args) {
  std::string path;
  bool json = false, tensors = false;
  for (const auto& a : args) {
    if (a == "--json")
      json = true;
    else if (a == "--tensors")
      tensors = true;
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ellm info: unknown option %s\n", a.c_str());
      return 2;
    } else
      path = a;
  }
  if (path.empty()) {
    std::fputs(kUsage, stderr);
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
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "info") return Info(args);
  if (cmd == "cpu") {
    std::printf("%s\n", ellm::HostCpu().ToString().c_str());
    return 0;
  }
  if (cmd == "version") {
    std::printf("ellm %s\n", ELLM_VERSION);
    return 0;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "ellm: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}
