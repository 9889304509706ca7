// The seccomp filter ellm-extract puts on itself once it holds its input
// in memory and before poppler sees a byte of it, so that a parser bug an
// attacker's PDF exploits cannot reach the network, start programs or
// change files: beyond the rlimits and timeout the parent applies (see
// extract/child_process.h).
#pragma once

#include "ellm/base/status.h"

namespace ellm::ingest::pdf {

// Allows only what text extraction needs (see the list in sandbox.cc):
// reading fds already open, writing to stdout and stderr, opening files
// read-only (poppler's and glibc's data files), memory without new
// executable mappings, futexes, the clock and exiting. Any other system
// call kills the whole process with SIGSYS (SECCOMP_RET_KILL_PROCESS),
// which the parent reports as extract.sandbox_violation. Irreversible; the
// process must be single-threaded (the filter is not synchronised to other
// threads). Errors only if the kernel refuses the filter.
Status EnterExtractorSandbox();

// Test-only (ELLM_TEST_EXTRACTOR_MISBEHAVE=socket|write|exec, read by
// ellm-extract after entering the sandbox): tries what the sandbox forbids,
// so tests can check it kills the child. Returns if `what` is empty or
// unknown, or, without the sandbox, after the forbidden call went through.
void MisbehaveForTesting(const char* what);

}  // namespace ellm::ingest::pdf
