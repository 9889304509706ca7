// The built-in document-stats pipeline: extraction statistics, no model.
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "ellm/base/json.h"
#include "ellm/pipelines/processor.h"

namespace ellm::pipelines {

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

  PipelineResult Run(const PipelineRequest& job, const std::atomic<bool>& cancel) override {
    StatusOr<nlohmann::json> params = ParseJson(job.params_json);
    if (!params.ok()) {
      return PipelineResult::Failed("invalid_params", "params: " + params.status().message());
    }
    int64_t hold_ms = 0;
    if (params->is_object() && params->contains("hold_ms")) {
      const nlohmann::json& hold = (*params)["hold_ms"];
      if (!hold.is_number_integer() || hold.get<int64_t>() < 0) {
        return PipelineResult::Failed("invalid_params",
                                      "params.hold_ms must be a non-negative integer");
      }
      hold_ms = hold.get<int64_t>();
    }
    auto started = std::chrono::steady_clock::now();
    PipelineOutput out;
    nlohmann::json stats = nlohmann::json::array();
    int64_t total_words = 0, total_pages = 0;
    for (size_t i = 0; i < job.documents.size(); ++i) {
      if (cancel.load()) return PipelineResult::Cancelled();
      const ingest::JobDocument& jd = job.documents[i];
      auto doc = LoadJobDocument(jd, options_);
      if (!doc.ok()) {
        return PipelineResult::FailedWith(
            DocumentErrorCode(doc.status()),
            DocumentName(i, job.documents.size(), jd) + ": " + doc.status().message(),
            doc.status());
      }
      int64_t words = 0, chars = 0;
      for (const auto& page : doc->pages) {
        words += static_cast<int64_t>(CountWords(page.text));
        chars += static_cast<int64_t>(page.text.size());
      }
      total_words += words;
      total_pages += doc->metadata.page_count;
      out.documents.push_back({static_cast<int>(i), jd.Label(), doc->metadata.sha256,
                               doc->metadata.page_count, 0, OcrPagesOf(*doc)});
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
      if (cancel.load()) return PipelineResult::Cancelled();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    out.output_text = std::to_string(job.documents.size()) + " document(s), " +
                      std::to_string(total_pages) + " page(s), " + std::to_string(total_words) +
                      " word(s)";
    out.output_json = nlohmann::json{{"documents", stats}}.dump();
    out.model_fingerprint = "none";
    out.pipeline_name = name_;
    out.pipeline_version = version_;
    out.strategy = "extract-only";
    PipelineResult result;
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
