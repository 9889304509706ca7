// A small "--name value" / "--switch" parser shared by the subcommands.
// Unknown flags and missing values are errors that name the flag.
// The short forms llama.cpp users expect (-m -p -f -n -c -t -s, see
// kShortFlags in flags.cc) stand for their long flag in every command that
// declares it; any other "-x" is an unknown flag. A lone "-" is a positional
// argument or a value (standard input).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::cli {

class Flags {
 public:
  // `with_value`: flags that take a value; `switches`: flags that do not.
  // The hidden flag --list-flags prints the command's long flags, one per
  // line and sorted, and exits with 0: tests check the bash completion
  // script (cli/completion/ellm.bash) against it, so the script cannot drift
  // from what the commands accept.
  static StatusOr<Flags> Parse(const std::vector<std::string>& args,
                               const std::set<std::string>& with_value,
                               const std::set<std::string>& switches);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback) const;
  StatusOr<double> GetDouble(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// Reads a whole file; errors name it.
StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace ellm::cli
