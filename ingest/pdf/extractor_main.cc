// ellm-extract: the sandboxed PDF/Word/OpenDocument -> Document child of
// ExtractDocument.
//
//   ellm-extract [--kind pdf|office] [--max-pages N] [--name NAME] --input-fd 3
//   ellm-extract [--kind pdf|office] [--max-pages N] FILE        (by hand)
//   (and --headings auto|layout, --ocr off|auto|force, --ocr-languages L,
//   --ocr-dpi N, --ocr-page-seconds S: see PdfOptions)
//
// --kind office reads a .docx or .odt (ingest/office), --kind html a web
// page, --kind image a PNG, JPEG or TIFF (OCR); pdf is the default.
// OCR is off unless asked for (the parent asks for extract.ocr, default
// auto); Tesseract loads its languages inside the sandbox, when the first
// page needs them.
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
#include <memory>
#include <new>
#include <string>

#include "ellm/base/sanitizers.h"
#include "ellm/ingest/extract.h"
#include "extract/protocol.h"
#include "office/html.h"
#include "office/office_to_document.h"
#include "pdf/image_to_document.h"
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

struct Args {
  int fd = -1;
  std::string name, path, kind = "pdf", headings = "auto", ocr = "off";
  ellm::ingest::pdf::PdfOptions pdf;
};

// false on a usage error.
bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (!a.empty() && a[0] != '-') {
      args->path = a;
      continue;
    }
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--headings") {
      args->headings = v;
    } else if (a == "--name") {
      args->name = v;
    } else if (a == "--kind") {
      args->kind = v;
    } else if (a == "--ocr") {
      args->ocr = v;
    } else if (a == "--ocr-languages") {
      args->pdf.ocr_languages = v;
    } else if (a == "--max-pages" || a == "--input-fd" || a == "--ocr-dpi" ||
               a == "--ocr-page-seconds") {
      const int n = std::atoi(v);
      (a == "--max-pages"  ? args->pdf.max_pages
       : a == "--input-fd" ? args->fd
       : a == "--ocr-dpi"  ? args->pdf.ocr_dpi
                           : args->pdf.ocr_page_seconds) = n;
    } else {
      return false;
    }
  }
  const auto ocr = ellm::ingest::ParseOcrMode(args->ocr);
  if (!ocr ||
      (args->kind != "pdf" && args->kind != "office" && args->kind != "image" &&
       args->kind != "html") ||
      (args->headings != "auto" && args->headings != "layout") ||
      (args->fd < 0 && args->path.empty())) {
    return false;
  }
  args->pdf.ocr = *ocr;
  args->pdf.headings_from_layout = args->headings == "layout";
  return true;
}

StatusOr<ellm::ingest::Document> Parse(const Args& args, std::string bytes,
                                       const std::string& name) {
  namespace ingest = ellm::ingest;
  if (args.kind == "office") {
    // Images in a Word file are read by OCR too (a scanned signature page).
    std::unique_ptr<ingest::pdf::PageReader> reader;
    const ingest::office::ImageTextFn image_text = [&](std::string_view image) {
      return ingest::pdf::ImageText(image, args.pdf, &reader);
    };
    return ingest::office::OfficeToDocument(bytes, name, image_text);
  }
  if (args.kind == "html") return ingest::office::HtmlToDocument(bytes, name);
  if (args.kind == "image") return ingest::pdf::ImageToDocument(bytes, name, args.pdf);
  return ingest::pdf::PdfToDocument(std::move(bytes), name, args.pdf);
}

int Run(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: ellm-extract [--kind pdf|office|image|html] [--max-pages N] [--name NAME] "
                 "[--headings auto|layout] [--ocr off|auto|force] [--ocr-languages L] "
                 "[--ocr-dpi N] [--ocr-page-seconds S] (--input-fd FD | FILE)\n");
    return 2;
  }
  int fd = args.fd;
  const std::string& path = args.path;
  std::string name = args.name;
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
  // (An image is not rendered: it needs no fonts.)
  if (args.kind == "pdf" && args.pdf.ocr != ellm::ingest::OcrMode::kOff) {
    ellm::ingest::pdf::PreloadFonts();
  }
  if (Status s = ellm::ingest::pdf::EnterExtractorSandbox(); !s.ok()) return Report(s);
  // "late:WHAT" misbehaves once the document is read (after OCR ran).
  const std::string misbehave = std::getenv("ELLM_TEST_EXTRACTOR_MISBEHAVE")
                                    ? std::getenv("ELLM_TEST_EXTRACTOR_MISBEHAVE")
                                    : "";
  const bool late = misbehave.starts_with("late:");
  if (!late)
    ellm::ingest::pdf::MisbehaveForTesting(misbehave.empty() ? nullptr : misbehave.c_str());
  StatusOr<ellm::ingest::Document> doc = Parse(args, std::move(bytes).value(), name);
  if (late) ellm::ingest::pdf::MisbehaveForTesting(misbehave.c_str() + 5);
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
