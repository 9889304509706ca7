// Runs the `ellm` binary the including test target was built against
// (ELLM_CLI_PATH, set by tests/CMakeLists.txt) and captures stdout and
// stderr together.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#ifndef ELLM_CLI_PATH
#error "tests using run_cli.h need ELLM_CLI_PATH (target_compile_definitions)"
#endif

namespace ellm::testing {

// `ellm ARGS` through the shell; returns the exit status, or -1 when the
// process could not run or did not exit normally.
inline int RunCli(const std::string& args, std::string* output) {
  const std::string cmd = std::string(ELLM_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace ellm::testing
