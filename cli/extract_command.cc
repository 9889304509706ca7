// ellm extract: what the model will see of a file. Prints the page-marked
// text (RenderForModel), or with --json the whole Document (metadata and
// pages). Errors go to stderr with their kind: "ellm extract: encrypted: ...".
#include <cstdio>
#include <string>

#include "commands.h"
#include "ellm/ingest/extract.h"
#include "flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kExtractUsage =
    "usage: ellm extract FILE [--json] [--max-pages N] [--max-bytes N] [--timeout SECONDS]\n"
    "                         [--extractor PATH]\n"
    "  FILE          a PDF, or a UTF-8 .txt / .md file\n"
    "  --json        print the document as JSON (metadata and pages)\n"
    "  --max-pages   reject PDFs with more pages (default 2000)\n"
    "  --max-bytes   reject larger files (default 256 MiB)\n"
    "  --timeout     wall-clock limit for parsing a PDF, in seconds (default 180)\n"
    "  --extractor   the ellm-extract binary (default: $ELLM_EXTRACTOR, then next to ellm,\n"
    "                then ../libexec/ellm/)\n";

}  // namespace

int Extract(const Args& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kExtractUsage, stdout);
      return 0;
    }
  }
  auto flags = Flags::Parse(args, {"max-pages", "max-bytes", "timeout", "extractor"}, {"json"});
  if (!flags.ok() || flags->positional().size() != 1) {
    std::fprintf(stderr, "ellm extract: %s\n%s",
                 flags.ok() ? "exactly one FILE is needed" : flags.status().message().c_str(),
                 kExtractUsage);
    return 2;
  }
  ingest::ExtractOptions options;
  auto max_pages = flags->GetInt("max-pages", options.max_pages);
  auto max_bytes = flags->GetInt("max-bytes", options.max_bytes);
  auto timeout = flags->GetDouble("timeout", options.wall_timeout.count() / 1000.0);
  for (const Status& s : {max_pages.status(), max_bytes.status(), timeout.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "ellm extract: %s\n", s.message().c_str());
      return 2;
    }
  }
  options.max_pages = static_cast<int>(*max_pages);
  options.max_bytes = *max_bytes;
  options.wall_timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout * 1000));
  options.extractor_path = flags->Get("extractor");
  if (Status s = options.Validate(); !s.ok()) {
    std::fprintf(stderr, "ellm extract: %s\n", s.message().c_str());
    return 2;
  }

  auto doc = ingest::ExtractDocument(flags->positional()[0], options);
  if (!doc.ok()) {
    auto kind = ingest::ExtractErrorOf(doc.status());
    std::fprintf(stderr, "ellm extract: %s: %s\n",
                 kind ? std::string(ingest::ExtractErrorName(*kind)).c_str() : "error",
                 doc.status().message().c_str());
    return 1;
  }
  const std::string out =
      flags->Has("json") ? ingest::ToJson(*doc, 2) + "\n" : ingest::RenderForModel(*doc);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace ellm::cli
