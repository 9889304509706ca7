#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ellm/pipelines/processor.h"

namespace ellm::pipelines {

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
    auto d = ingest::ExtractDocument(doc.resolved_path, options);
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
  StatusOr<ingest::Document> d = written;
  if (written.ok()) d = ingest::ExtractDocument(path, options);
  std::filesystem::remove_all(tmpl, ec);
  if (d.ok()) d->metadata.source = doc.Label();
  return d;
}

std::string DocumentErrorCode(const Status& status) {
  auto kind = ingest::ExtractErrorOf(status);
  if (!kind) return "document.error";
  return "document." + std::string(ingest::ExtractErrorName(*kind));
}

namespace {

size_t CountWords(const std::string& text) {
  size_t words = 0;
  bool in_word = false;
  for (unsigned char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

class DocumentStats : public Processor {
 public:
  explicit DocumentStats(const ingest::ExtractOptions& options) : options_(options) {}
  const std::string& name() const override { return name_; }
  const std::string& version() const override { return version_; }

  ProcessorResult Run(const ingest::JobMessage& job, const std::atomic<bool>& cancel) override {
    auto params = nlohmann::json::parse(job.params_json, nullptr, false);
    int64_t hold_ms = 0;
    if (params.is_object() && params.contains("hold_ms")) {
      if (!params["hold_ms"].is_number_integer() || params["hold_ms"].get<int64_t>() < 0) {
        return ProcessorResult::Failed("invalid_params",
                                       "params.hold_ms must be a non-negative integer");
      }
      hold_ms = params["hold_ms"].get<int64_t>();
    }
    auto started = std::chrono::steady_clock::now();
    ProcessorOutput out;
    nlohmann::json stats = nlohmann::json::array();
    int64_t total_words = 0, total_pages = 0;
    for (size_t i = 0; i < job.documents.size(); ++i) {
      if (cancel.load()) return ProcessorResult::Cancelled();
      const ingest::JobDocument& jd = job.documents[i];
      auto doc = LoadJobDocument(jd, options_);
      if (!doc.ok()) {
        return ProcessorResult::Failed(
            DocumentErrorCode(doc.status()),
            "document " + std::to_string(i) + " ('" + jd.Label() + "'): " + doc.status().message());
      }
      int64_t words = 0, chars = 0;
      for (const auto& page : doc->pages) {
        words += static_cast<int64_t>(CountWords(page.text));
        chars += static_cast<int64_t>(page.text.size());
      }
      total_words += words;
      total_pages += doc->metadata.page_count;
      out.documents.push_back(
          {static_cast<int>(i), jd.Label(), doc->metadata.sha256, doc->metadata.page_count, 0});
      stats.push_back({{"document", jd.Label()},
                       {"media_type", doc->metadata.media_type},
                       {"pages", doc->metadata.page_count},
                       {"words", words},
                       {"bytes", doc->metadata.byte_size},
                       {"text_bytes", chars},
                       {"sha256", doc->metadata.sha256}});
    }
    auto hold_until = started + std::chrono::milliseconds(hold_ms);
    while (std::chrono::steady_clock::now() < hold_until) {
      if (cancel.load()) return ProcessorResult::Cancelled();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    store::ResultRecord& r = out.result;
    r.output_text = std::to_string(job.documents.size()) + " document(s), " +
                    std::to_string(total_pages) + " page(s), " + std::to_string(total_words) +
                    " word(s)";
    r.output_json = nlohmann::json{{"documents", stats}}.dump();
    r.model_fingerprint = "none";
    r.pipeline_name = name_;
    r.pipeline_version = version_;
    r.strategy = "extract-only";
    ProcessorResult result;
    result.output = std::move(out);
    return result;
  }

 private:
  ingest::ExtractOptions options_;
  std::string name_ = "document-stats";
  std::string version_ = "1";
};

}  // namespace

std::unique_ptr<Processor> MakeDocumentStatsProcessor(const ingest::ExtractOptions& options) {
  return std::make_unique<DocumentStats>(options);
}

}  // namespace ellm::pipelines
