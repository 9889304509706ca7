// The processor registry and how a job's documents are read (shared by
// every processor).
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ellm/base/json.h"
#include "ellm/pipelines/processor.h"

namespace ellm::pipelines {

bool IsTransient(const Status& status) {
  if (ingest::ExtractErrorOf(status).has_value()) return false;
  switch (status.code()) {
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

PipelineResult PipelineResult::FailedWith(std::string code, std::string message,
                                          const Status& cause) {
  if (!IsTransient(cause)) return Failed(std::move(code), std::move(message));
  std::string name(StatusCodeName(cause.code()));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  PipelineResult r = Failed(std::move(name), std::move(message));
  r.transient = true;
  return r;
}

std::vector<OcrPageSummary> OcrPagesOf(const ingest::Document& doc) {
  std::vector<OcrPageSummary> pages;
  for (const ingest::Page& p : doc.pages) {
    if (p.read_by == ingest::kReadByOcr) pages.push_back({p.number, p.ocr_confidence, p.ocr_note});
  }
  return pages;
}

namespace {

// "3", "3 and 5", "3, 5 and 9"
std::string PageList(const std::vector<int>& pages) {
  std::string out;
  for (size_t i = 0; i < pages.size(); ++i) {
    if (i > 0) out += i + 1 == pages.size() ? " and " : ", ";
    out += std::to_string(pages[i]);
  }
  return out;
}

// The note for one document, empty when OCR read all its scanned pages well.
std::string OcrNote(const DocumentSummary& d) {
  std::vector<int> low, none, stopped;
  int confidence = 0;
  for (const OcrPageSummary& p : d.ocr_pages) {
    if (p.note == "low confidence") {
      low.push_back(p.page);
      confidence += p.confidence;
    } else if (p.note == "no text found") {
      none.push_back(p.page);
    } else if (!p.note.empty()) {
      stopped.push_back(p.page);
    }
  }
  std::vector<std::string> parts;
  auto pages = [](const std::vector<int>& v) {
    return (v.size() == 1 ? "page " : "pages ") + PageList(v);
  };
  if (!low.empty()) {
    parts.push_back("read " + pages(low) + " with low confidence (mean " +
                    std::to_string(confidence / static_cast<int>(low.size())) + "%)");
  }
  if (!none.empty()) parts.push_back("found no text on " + pages(none) + " (blank or pictures)");
  if (!stopped.empty()) parts.push_back("stopped at its time limit on " + pages(stopped));
  if (parts.empty()) return "";
  std::string note = "Note (" + d.label + "): OCR ";
  for (size_t i = 0; i < parts.size(); ++i) {
    note += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return note + ". What these scanned pages say may be missing or misread here.";
}

}  // namespace

void NoteOcrPages(PipelineOutput* output) {
  std::vector<std::string> notes;
  for (const DocumentSummary& d : output->documents) {
    if (std::string note = OcrNote(d); !note.empty()) notes.push_back(std::move(note));
  }
  if (notes.empty()) return;
  for (const std::string& note : notes) {
    output->output_text += (output->output_text.empty() ? "" : "\n\n") + note;
  }
  if (!output->output_json) return;
  StatusOr<nlohmann::ordered_json> parsed = ParseOrderedJson(*output->output_json);
  if (!parsed.ok() || !parsed->is_object()) return;
  nlohmann::ordered_json& warnings = (*parsed)["warnings"];
  if (!warnings.is_array()) warnings = nlohmann::ordered_json::array();
  for (const std::string& note : notes) warnings.push_back(note);
  output->output_json = parsed->dump();
}

Status ProcessorRegistry::Add(std::unique_ptr<Processor> processor) {
  std::string name = processor->name();
  if (processors_.count(name)) {
    return Status(StatusCode::kAlreadyExists,
                  "a pipeline named '" + name + "' is already registered");
  }
  processors_[name] = std::move(processor);
  return OkStatus();
}

Processor* ProcessorRegistry::Find(const std::string& name) const {
  auto it = processors_.find(name);
  return it == processors_.end() ? nullptr : it->second.get();
}

std::vector<std::string> ProcessorRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, p] : processors_) out.push_back(name);
  return out;
}

StatusOr<ingest::Document> LoadJobDocument(const ingest::JobDocument& doc,
                                           const ingest::ExtractOptions& options) {
  if (!doc.is_inline) {
    // Beneath the root the message was checked against, so a symlink
    // swapped in since cannot lead outside it.
    auto d = doc.allowed_root.empty()
                 ? ingest::ExtractDocument(doc.resolved_path, options)
                 : ingest::ExtractDocumentBeneath(doc.allowed_root, doc.resolved_path, options);
    if (!d.ok()) return d.status();
    d->metadata.source = doc.path;
    return d;
  }
  // Inline bytes go through the same sandboxed extractor, from a private
  // directory that is removed afterwards.
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec) return InternalError("no temporary directory: " + ec.message());
  std::string tmpl = (base / "ellm-inline-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return ErrnoError(errno, "cannot create a temporary directory");
  std::string path = tmpl + "/" + doc.name;
  Status written;
  {
    std::ofstream out(path, std::ios::binary);
    out.write(doc.inline_bytes.data(), static_cast<std::streamsize>(doc.inline_bytes.size()));
    if (!out)
      written = ResourceExhaustedError("cannot write inline document '" + doc.name + "' to " +
                                       tmpl + " (disk full?)");
  }
  if (!written.ok()) {
    std::filesystem::remove_all(tmpl, ec);
    return written;
  }
  StatusOr<ingest::Document> d = ingest::ExtractDocument(path, options);
  std::filesystem::remove_all(tmpl, ec);
  if (d.ok()) d->metadata.source = doc.Label();
  return d;
}

std::string DocumentName(size_t index, size_t count, const ingest::JobDocument& doc) {
  return "document " + std::to_string(index + 1) + " of " + std::to_string(count) + " ('" +
         doc.Label() + "')";
}

std::string DocumentErrorCode(const Status& status) {
  auto kind = ingest::ExtractErrorOf(status);
  if (!kind) return "document.error";
  return "document." + std::string(ingest::ExtractErrorName(*kind));
}

}  // namespace ellm::pipelines
