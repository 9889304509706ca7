// The wire contract between ExtractDocument (parent) and the ellm-extract
// child. The child reads the PDF from fd 3 (read-only), writes exactly one
// JSON value to stdout and exits:
//   exit 0: stdout is the Document (ToJson in document.h; the parent fills
//           in source, byte_size and sha256);
//   exit 3: stdout is {"error": "<ExtractErrorName>", "message": "..."}.
// Anything else (a signal, another exit code, output that does not parse) is
// a crash. Append-only: old parents must understand new children.
#pragma once

#include <string>
#include <string_view>

#include "ellm/base/status.h"

namespace ellm::ingest {

inline constexpr int kExtractorInputFd = 3;
inline constexpr int kExtractorExitOk = 0;
inline constexpr int kExtractorExitReportedError = 3;

// REQUIRES: ExtractErrorOf(status) has a value.
std::string EncodeExtractorError(const Status& status);
// The Status the child reported, or a kCrashed error if `json` is not a
// well-formed report.
Status DecodeExtractorError(std::string_view json);

}  // namespace ellm::ingest
