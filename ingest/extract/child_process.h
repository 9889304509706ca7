// Runs a binary as a limited child process: fork + execv (no shell), stdin
// from /dev/null, one read-only input fd passed as fd 3, stdout captured up
// to a cap, the tail of stderr kept, rlimits on CPU time and address space,
// no file writes (RLIMIT_FSIZE 0) and no core dumps, a wall-clock deadline
// after which the child is SIGKILLed. Every other fd is closed in the child.
// Thread-safe: each call owns its child; safe to call from a multithreaded
// process (only async-signal-safe calls run between fork and exec).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::ingest {

struct ChildLimits {
  int cpu_seconds = 60;                            // RLIMIT_CPU soft limit (SIGXCPU); hard = +1 s
  int64_t address_space_bytes = int64_t{2} << 30;  // RLIMIT_AS; not applied under ASan
  int64_t max_output_bytes = int64_t{64} << 20;    // stdout beyond this kills the child
  std::chrono::milliseconds wall_timeout{60'000};
};

struct ChildResult {
  enum class End {
    kExited,       // exit_code is valid
    kSignaled,     // signal is valid (SIGXCPU: CPU limit)
    kWallTimeout,  // we killed it at the deadline
    kOutputLimit,  // we killed it for writing too much
  };
  End end = End::kExited;
  int exit_code = 0;
  int signal = 0;
  std::string out;         // stdout (at most max_output_bytes)
  std::string err_tail;    // the last 4 KiB of stderr
  double cpu_seconds = 0;  // user + system time of the child
};

// The child's whole environment: none of this process's variables (API
// keys, broker credentials, paths) but the sanitizers' options and the
// test hooks of the extractor and of the tests' fake one, and
// OMP_THREAD_LIMIT=1 (Tesseract must not start threads in the sandbox).
std::vector<std::string> ChildEnvironment();

// `argv[0]` is passed as given; `binary` is executed. `input_fd` (-1: none)
// becomes the child's fd 3. Errors only for failures in this process (pipe,
// fork): what happened to the child is in the result.
StatusOr<ChildResult> RunChild(const std::string& binary, const std::vector<std::string>& argv,
                               int input_fd, const ChildLimits& limits);

}  // namespace ellm::ingest
