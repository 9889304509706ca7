// ExtractDocument: one input file -> Document, the entry point pipelines use.
//
// The file's content decides how it is read, never its name alone: a file
// starting with "%PDF-" is a PDF, parsed by poppler in a child process (the
// `ellm-extract` binary); a ZIP or OLE compound file is a Word (.docx) or
// OpenDocument text (.odt) file, parsed by libzip and pugixml in the same
// child (encrypted ones, old .doc files and other ZIPs are refused clearly).
// The child runs under limits on CPU time, address space, output size and
// wall-clock time, and inside a seccomp filter (no sockets, no new programs,
// no file opened for writing), so a crash, hang, memory blow-up or exploit
// on a hostile file becomes an error for that file alone. A valid UTF-8
// file passes through as plain text, or as Markdown when named *.md or
// *.markdown. Anything else is rejected.
//
// The input is only ever opened read-only; nothing is written next to it.
// Thread-safe: concurrent calls run independent children.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "ellm/ingest/document.h"

namespace ellm::ingest {

// Why an extraction failed. Every error ExtractDocument reports about the
// input carries exactly one of these as its reason() ("extract.<name>", see
// ExtractErrorName), so the job store can record the kind of failure.
// Errors about our own setup (invalid options, the extractor binary missing,
// fork or pipe failing) carry none: they are not the document's fault and a
// retry after fixing the installation may succeed.
// Serialized by name: append-only, never renamed.
enum class ExtractError {
  kNotFound,          // no such file                      (StatusCode::kNotFound)
  kUnreadable,        // exists but cannot be read: permissions, a directory, I/O error
  kNotPdf,            // named .pdf (or sniffed as binary) but not a PDF
  kUnsupportedType,   // not a PDF, Word/OpenDocument text file or UTF-8 text
  kEncrypted,         // password-protected: needs a password to open (PDF, Word, ODT)
  kDamaged,           // a PDF poppler cannot repair, a broken ZIP or XML part
  kNoTextLayer,       // no page has text: a scan without OCR
  kTooManyPages,      // above ExtractOptions::max_pages
  kTooLarge,          // above ExtractOptions::max_bytes
  kTimeout,           // wall-clock or CPU-time limit hit
  kResourceLimit,     // address-space or output-size limit hit
  kCrashed,           // the extractor died (signal, bad exit, garbled output)
  kSandboxViolation,  // the extractor made a system call its seccomp filter forbids
};

// "not_found", "unreadable", "not_pdf", ... (stable).
std::string_view ExtractErrorName(ExtractError error);
// The reason string an ExtractDocument error carries: "extract.<name>".
std::string ExtractErrorReason(ExtractError error);
// The ExtractError a Status carries, if its reason() is one of ours.
std::optional<ExtractError> ExtractErrorOf(const Status& status);
// A Status with the StatusCode that fits `error`, `message`, and the reason.
Status MakeExtractError(ExtractError error, std::string message);

// When a PDF page is read by OCR (Tesseract, in the extractor child):
// kAuto, a page whose text layer is empty or unusable (fewer than 20
// letters and digits, or mostly undecodable glyphs) and where OCR then
// reads more than the layer had; kForce, every page; kOff, never (a PDF
// with no text on any page is then kNoTextLayer).
enum class OcrMode { kOff, kAuto, kForce };

// "off", "auto", "force" <-> OcrMode; nullopt for anything else.
std::optional<OcrMode> ParseOcrMode(std::string_view s);
std::string_view OcrModeName(OcrMode mode);

struct ExtractOptions {
  int max_pages = 2000;                    // more pages -> kTooManyPages
  int64_t max_bytes = int64_t{256} << 20;  // larger files -> kTooLarge
  // Limits on the extractor child (PDFs only).
  int cpu_seconds = 120;                            // RLIMIT_CPU -> kTimeout
  int64_t address_space_bytes = int64_t{2} << 30;   // RLIMIT_AS -> kResourceLimit
  int64_t max_output_bytes = int64_t{256} << 20;    // JSON from the child -> kResourceLimit
  std::chrono::milliseconds wall_timeout{180'000};  // then SIGKILL -> kTimeout
  // The extractor binary. Empty: $ELLM_EXTRACTOR, else `ellm-extract` next to
  // the running executable, else ../libexec/ellm/ellm-extract relative to it.
  std::string extractor_path;
  // A PDF's heading tree: from its outline (bookmarks) when it has one, else
  // from the page layout (false); from the layout always (true), for a PDF
  // whose bookmarks are wrong, and to measure the layout's headings.
  bool headings_from_layout = false;
  // OCR of scanned PDF pages (see OcrMode): Tesseract's languages ("eng",
  // "eng+deu"; each needs Debian's tesseract-ocr-LANG), the resolution
  // pages are rendered at, and the time Tesseract may spend on one page
  // (then the page keeps what it read, marked). The child's cpu_seconds
  // and wall_timeout still bound the whole document.
  OcrMode ocr = OcrMode::kAuto;
  std::string ocr_languages = "eng";
  int ocr_dpi = 300;
  int ocr_page_seconds = 60;

  // OK, or InvalidArgument naming the first limit that is not positive.
  Status Validate() const;
};

// Errors name the file; see ExtractError for which carry a reason.
StatusOr<Document> ExtractDocument(const std::string& path, const ExtractOptions& options);

// As ExtractDocument, for a path checked earlier to lie beneath `root`
// (both absolute and canonical: no symlinks, no "." or ".."; the job
// message's check resolves them). The file is opened with openat2
// (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) relative to `root`, so a symlink
// or rename swapped in after the check cannot redirect the read outside
// `root`: such a path fails as kUnreadable. `path` not under `root` is
// kUnreadable too. A kernel without openat2 (before Linux 5.6) gives a
// FailedPrecondition error with no reason (the installation's fault).
StatusOr<Document> ExtractDocumentBeneath(const std::string& root, const std::string& path,
                                          const ExtractOptions& options);

// Where ExtractDocument looks for the extractor given `options` (see
// ExtractOptions::extractor_path); NotFound listing the places tried.
StatusOr<std::string> FindExtractor(const ExtractOptions& options);

// Test-only fault injection (ellmd: ELLM_TEST_FAIL_EXTRACTOR_FORKS=N): the
// next `n` forks of the extractor child in this process fail with EAGAIN,
// as when the process limit is reached, so ExtractDocument returns an
// Unavailable error with no extraction reason (a transient failure).
// Thread-safe.
void FailExtractorForksForTesting(int n);

}  // namespace ellm::ingest
