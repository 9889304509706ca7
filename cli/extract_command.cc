// ellm extract: what the model will see of a file. Prints the page-marked
// text (RenderForModel), with --json the whole Document (metadata, pages and
// heading tree), or with --outline the heading tree alone. Errors go to stderr with their kind:
// "ellm extract: encrypted: ...". The limits are the config's extract: section (--config, else
// /etc/ellm/ellm.yaml when readable, else the defaults), so a file ellmd
// refuses is refused here too; the flags override it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "commands.h"
#include "ellm/app/config.h"
#include "ellm/ingest/extract.h"
#include "flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kExtractUsage =
    "usage: ellm extract FILE [--json | --outline] [--max-pages N] [--max-bytes N]\n"
    "                         [--timeout SECONDS] [--memory-mib N] [--config FILE]\n"
    "                         [--extractor PATH] [--headings auto|layout]\n"
    "                         [--ocr auto|off|force] [--ocr-languages L] [--ocr-dpi N]\n"
    "  FILE          a PDF, a Word (.docx) or OpenDocument text (.odt) file, a scan as a PNG,\n"
    "                JPEG or TIFF image (read by OCR), or UTF-8 text (Markdown when named\n"
    "                .md); the content decides, not the name\n"
    "  --json        print the document as JSON (metadata, pages and headings)\n"
    "  --outline     print the document's heading tree: one heading a line, indented by\n"
    "                level, with its page\n"
    "  --max-pages   reject PDFs with more pages (default 2000)\n"
    "  --max-bytes   reject larger files (default 256 MiB)\n"
    "  --timeout     wall-clock limit for parsing a PDF or office file, in seconds\n"
    "                (default 180); its CPU time is limited to two thirds of it\n"
    "  --memory-mib  address-space limit of the document parser, in MiB (default 2048)\n"
    "  --config      the defaults of the four limits above: the file's extract: section\n"
    "                (default /etc/ellm/ellm.yaml when readable)\n"
    "  --extractor   the ellm-extract binary (default: $ELLM_EXTRACTOR, then next to ellm,\n"
    "                then ../libexec/ellm/)\n"
    "  --headings    a PDF's heading tree from its outline when it has one (auto), or\n"
    "                from its page layout always (layout)\n"
    "  --ocr         read scanned PDF pages with OCR: auto (pages with no usable text\n"
    "                layer; the default), off, or force (every page)\n"
    "  --ocr-languages  Tesseract's languages, e.g. eng or eng+deu (default eng; each\n"
    "                needs Debian's tesseract-ocr-LANG package)\n"
    "  --ocr-dpi     the resolution pages are rendered at for OCR (default 300)\n"
    "  (--config gives the defaults of every option above: its extract: section)\n";

// The extract: section of --config (else /etc/ellm/ellm.yaml when readable,
// else the defaults) with the limit flags over it; validated.
StatusOr<ingest::ExtractOptions> OptionsFrom(const Flags& flags) {
  std::string config_path = flags.Get("config");
  if (config_path.empty() && access("/etc/ellm/ellm.yaml", R_OK) == 0) {
    config_path = "/etc/ellm/ellm.yaml";
  }
  ingest::ExtractOptions options;
  if (!config_path.empty()) {
    ELLM_ASSIGN_OR_RETURN(app::Config config, app::LoadConfig(config_path));
    options = config.extract;
  }
  ELLM_ASSIGN_OR_RETURN(int64_t max_pages, flags.GetInt("max-pages", options.max_pages));
  ELLM_ASSIGN_OR_RETURN(options.max_bytes, flags.GetInt("max-bytes", options.max_bytes));
  ELLM_ASSIGN_OR_RETURN(int64_t memory_mib,
                        flags.GetInt("memory-mib", options.address_space_bytes >> 20));
  if (max_pages < 1 || max_pages > 1'000'000'000) {
    return InvalidArgumentError("--max-pages must be in [1, 1000000000]");
  }
  if (memory_mib < 64 || memory_mib > (int64_t{1} << 20)) {
    return InvalidArgumentError("--memory-mib must be in [64, 1048576]");  // as the config's
  }
  options.max_pages = static_cast<int>(max_pages);
  options.address_space_bytes = memory_mib << 20;
  if (flags.Has("timeout")) {
    ELLM_ASSIGN_OR_RETURN(double timeout, flags.GetDouble("timeout", 0));
    if (!(timeout > 0 && timeout <= 86400)) {
      return InvalidArgumentError("--timeout must be in (0, 86400] seconds");
    }
    options.wall_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
    // Two thirds of the wall clock, as the config's extract.timeout_s sets it.
    options.cpu_seconds = std::max(1, static_cast<int>(timeout * 2 / 3));
  }
  options.extractor_path = flags.Get("extractor");
  const std::string headings = flags.Get("headings");
  if (!headings.empty() && headings != "auto" && headings != "layout") {
    return InvalidArgumentError(
        "--headings must be auto (the PDF's outline when it has one) or "
        "layout");
  }
  options.headings_from_layout = headings == "layout";
  if (flags.Has("ocr")) {
    const auto mode = ingest::ParseOcrMode(flags.Get("ocr"));
    if (!mode) return InvalidArgumentError("--ocr must be auto, off or force");
    options.ocr = *mode;
  }
  if (flags.Has("ocr-languages")) options.ocr_languages = flags.Get("ocr-languages");
  ELLM_ASSIGN_OR_RETURN(int64_t dpi, flags.GetInt("ocr-dpi", options.ocr_dpi));
  if (dpi < 50 || dpi > 1200) return InvalidArgumentError("--ocr-dpi must be in [50, 1200]");
  options.ocr_dpi = static_cast<int>(dpi);
  ELLM_RETURN_IF_ERROR(options.Validate());
  return options;
}

// "  2.1 Fees (p. 3)": two spaces a level below the first.
std::string OutlineText(const ingest::Document& doc) {
  std::string out;
  for (const ingest::Heading& h : doc.headings) {
    out += std::string(static_cast<size_t>(2 * (h.level - 1)), ' ');
    out += h.number.empty() ? h.title : h.number + " " + h.title;
    out += " (p. " + std::to_string(h.page) + ")\n";
  }
  return out;
}

}  // namespace

int Extract(const Args& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kExtractUsage, stdout);
      return 0;
    }
  }
  auto flags = Flags::Parse(args,
                            {"max-pages", "max-bytes", "timeout", "memory-mib", "config",
                             "extractor", "headings", "ocr", "ocr-languages", "ocr-dpi"},
                            {"json", "outline"});
  if (!flags.ok() || flags->positional().size() != 1) {
    std::fprintf(stderr, "ellm extract: %s\n%s",
                 flags.ok() ? "exactly one FILE is needed" : flags.status().message().c_str(),
                 kExtractUsage);
    return 2;
  }
  auto options = OptionsFrom(*flags);
  if (!options.ok()) {
    std::fprintf(stderr, "ellm extract: %s\n", options.status().message().c_str());
    return 2;
  }

  auto doc = ingest::ExtractDocument(flags->positional()[0], *options);
  if (!doc.ok()) {
    auto kind = ingest::ExtractErrorOf(doc.status());
    std::fprintf(stderr, "ellm extract: %s: %s\n",
                 kind ? std::string(ingest::ExtractErrorName(*kind)).c_str() : "error",
                 doc.status().message().c_str());
    return 1;
  }
  const std::string out = flags->Has("json")      ? ingest::ToJson(*doc, 2) + "\n"
                          : flags->Has("outline") ? OutlineText(*doc)
                                                  : ingest::RenderForModel(*doc);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace ellm::cli
