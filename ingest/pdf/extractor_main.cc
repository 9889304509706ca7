// ellm-extract: the sandboxed PDF/Word/OpenDocument -> Document child of
// ExtractDocument.
//
//   ellm-extract [--kind pdf|office] [--max-pages N] [--name NAME] --input-fd 3
//   ellm-extract [--kind pdf|office] [--max-pages N] FILE        (by hand)
//
// --kind office reads a .docx or .odt (ingest/office); pdf is the default.
//
// Writes one JSON value to stdout and exits as extract/protocol.h says. It
// never writes a file; the parent runs it under rlimits and a timeout, and
// it enters its seccomp sandbox (pdf/sandbox.h) once the input is in memory,
// before poppler parses it.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "ellm/base/sanitizers.h"
#include "ellm/ingest/extract.h"
#include "extract/protocol.h"
#include "office/office_to_document.h"
#include "pdf/pdf_to_document.h"
#include "pdf/sandbox.h"

#if ELLM_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace {

using ellm::Status;
using ellm::StatusOr;
using ellm::ingest::ExtractError;
using ellm::ingest::MakeExtractError;

StatusOr<std::string> ReadAll(int fd, const std::string& name) {
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return MakeExtractError(ExtractError::kUnreadable,
                              name + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) return bytes;
    bytes.append(buf, static_cast<size_t>(n));
  }
}

bool WriteAll(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(STDOUT_FILENO, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int Report(const Status& status) {
  return WriteAll(ellm::ingest::EncodeExtractorError(status))
             ? ellm::ingest::kExtractorExitReportedError
             : 1;
}

int Run(int argc, char** argv) {
  int max_pages = 1 << 30, fd = -1;
  std::string name, path, kind = "pdf", headings = "auto";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--max-pages" || a == "--input-fd" || a == "--name" || a == "--kind" ||
         a == "--headings") &&
        i + 1 < argc) {
      const char* v = argv[++i];
      if (a == "--headings") {
        headings = v;
      } else if (a == "--name" || a == "--kind") {
        (a == "--name" ? name : kind) = v;
      } else {
        (a == "--max-pages" ? max_pages : fd) = std::atoi(v);
      }
    } else if (!a.empty() && a[0] != '-') {
      path = a;
    } else {
      kind = "";
    }
  }
  if ((kind != "pdf" && kind != "office") || (headings != "auto" && headings != "layout") ||
      (fd < 0 && path.empty())) {
    std::fprintf(stderr,
                 "usage: ellm-extract [--kind pdf|office] [--max-pages N] [--name NAME] "
                 "[--headings auto|layout] (--input-fd FD | FILE)\n");
    return 2;
  }
  if (fd < 0) {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Report(
          MakeExtractError(errno == ENOENT ? ExtractError::kNotFound : ExtractError::kUnreadable,
                           path + ": " + std::strerror(errno)));
    }
  }
  if (name.empty()) name = path.empty() ? "input" : path;
  StatusOr<std::string> bytes = ReadAll(fd, name);
  if (!bytes.ok()) return Report(bytes.status());
  close(fd);
#if ELLM_ASAN
  // LeakSanitizer's check runs a tracer thread (clone, ptrace) that the
  // sandbox kills: run it now, which also skips the one at exit.
  __lsan_do_leak_check();
#endif
  if (Status s = ellm::ingest::pdf::EnterExtractorSandbox(); !s.ok()) return Report(s);
  ellm::ingest::pdf::MisbehaveForTesting(std::getenv("ELLM_TEST_EXTRACTOR_MISBEHAVE"));
  StatusOr<ellm::ingest::Document> doc =
      kind == "office" ? ellm::ingest::office::OfficeToDocument(*bytes, name)
                       : ellm::ingest::pdf::PdfToDocument(std::move(bytes).value(), name, max_pages,
                                                          headings == "layout");
  if (!doc.ok()) return Report(doc.status());
  return WriteAll(ellm::ingest::ToJson(*doc)) ? ellm::ingest::kExtractorExitOk : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::bad_alloc&) {
    return Report(MakeExtractError(ExtractError::kResourceLimit,
                                   "the document needs more memory than the extractor may use"));
  }
}
