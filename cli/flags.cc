#include "flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ellm::cli {
namespace {

// Short flag -> long flag, the names llama.cpp's tools use. An alias applies
// only in commands that declare the long flag.
struct ShortFlag {
  char letter;
  const char* name;
};
constexpr ShortFlag kShortFlags[] = {
    {'m', "model"}, {'p', "prompt"},  {'f', "file"}, {'n', "max-tokens"},
    {'c', "ctx"},   {'t', "threads"}, {'s', "seed"},
};

// The long name "-x" stands for in this command, or "" when none.
std::string LongNameOf(const std::string& arg, const std::set<std::string>& with_value,
                       const std::set<std::string>& switches) {
  if (arg.size() != 2) return "";
  for (const ShortFlag& s : kShortFlags) {
    if (s.letter == arg[1] && (with_value.count(s.name) || switches.count(s.name))) return s.name;
  }
  return "";
}

[[noreturn]] void ListFlagsAndExit(const std::set<std::string>& with_value,
                                   const std::set<std::string>& switches) {
  std::set<std::string> all = with_value;
  all.insert(switches.begin(), switches.end());
  for (const std::string& n : all) std::printf("--%s\n", n.c_str());
  std::fflush(stdout);
  std::exit(0);
}

}  // namespace

StatusOr<Flags> Flags::Parse(const std::vector<std::string>& args,
                             const std::set<std::string>& with_value,
                             const std::set<std::string>& switches) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--list-flags") ListFlagsAndExit(with_value, switches);
    std::string name, value;
    if (a.rfind("--", 0) == 0) {
      name = a.substr(2);
    } else if (a.size() > 1 && a[0] == '-') {
      name = LongNameOf(a, with_value, switches);
      if (name.empty()) return InvalidArgumentError("unknown flag " + a);
    } else {
      f.positional_.push_back(a);
      continue;
    }
    size_t eq = name.find('=');
    bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (switches.count(name) && !inline_value) {
      f.values_[name] = "1";
    } else if (with_value.count(name)) {
      if (!inline_value) {
        if (i + 1 >= args.size()) return InvalidArgumentError("flag --" + name + " needs a value");
        value = args[++i];
      }
      f.values_[name] = value;
    } else {
      return InvalidArgumentError("unknown flag --" + name);
    }
  }
  return f;
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

StatusOr<int64_t> Flags::GetInt(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno != 0 || end == it->second.c_str() || *end != '\0') {
    return InvalidArgumentError("flag --" + name + ": '" + it->second + "' is not an integer");
  }
  return static_cast<int64_t>(v);
}

StatusOr<double> Flags::GetDouble(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (errno != 0 || end == it->second.c_str() || *end != '\0') {
    return InvalidArgumentError("flag --" + name + ": '" + it->second + "' is not a number");
  }
  return v;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError(errno, "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ellm::cli
