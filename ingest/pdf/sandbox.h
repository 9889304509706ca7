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
// First, where the kernel has Landlock (Linux 5.13+), confines the file
// system (ConfineFileSystem): even read-only opens reach only poppler's
// data, the time zone and the fonts.
Status EnterExtractorSandbox();

// Loads fontconfig's configuration and font cache, for rendering pages
// (OCR) inside the sandbox: poppler looks up a system font for every font
// a PDF does not embed, and fontconfig's first use probes files with calls
// the sandbox forbids. Call before EnterExtractorSandbox.
void PreloadFonts();

// Landlock: this process may from now on read files only under poppler's
// data, the time zone files, the fonts and Tesseract's data, and write, create, remove or
// execute nothing anywhere (open fds stay usable). false when the kernel
// has no Landlock (nothing changed); an error if it has and refused.
StatusOr<bool> ConfineFileSystem();

// Test-only (ELLM_TEST_EXTRACTOR_MISBEHAVE=socket|write|exec|read|env, read by
// ellm-extract after entering the sandbox; with a "late:" prefix, after the
// document was read, OCR included): tries what the sandbox forbids,
// so tests can check it kills the child (socket, write, exec). `read`
// (/etc/passwd) and `env` (a variable the parent should not have passed)
// abort the child if they succeed, a crash instead of a violation. Returns
// if `what` is empty or unknown, or when the attempt was refused.
void MisbehaveForTesting(const char* what);

}  // namespace ellm::ingest::pdf
