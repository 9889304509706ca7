// Processor: what runs one job's documents to a result. The daemon's job
// runner and the CLI look processors up by pipeline name in a
// ProcessorRegistry; YAML pipelines on the engine and the built-in
// `document-stats` processor both implement this interface.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/ingest/extract.h"
#include "ellm/ingest/job_message.h"
#include "ellm/pipelines/progress.h"
#include "ellm/store/job_store.h"

namespace ellm::pipelines {

struct ProcessorOutput {
  store::ResultRecord result;
  std::vector<store::DocumentRecord> documents;
};

// Exactly one of: output set (success), error_code set (the job failed, for
// a reason that will not change on retry), or cancelled.
struct ProcessorResult {
  std::optional<ProcessorOutput> output;
  std::string error_code;  // stable, e.g. "document.encrypted" (append-only)
  std::string error;       // for people: what, which document, what to do
  bool cancelled = false;

  static ProcessorResult Failed(std::string code, std::string message) {
    ProcessorResult r;
    r.error_code = std::move(code);
    r.error = std::move(message);
    return r;
  }
  static ProcessorResult Cancelled() {
    ProcessorResult r;
    r.cancelled = true;
    return r;
  }
};

class Processor {
 public:
  virtual ~Processor() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& version() const = 0;
  // Runs `job`. Thread-compatible: one job at a time per processor.
  // Checks `cancel` between steps and returns Cancelled() soon after it is set.
  virtual ProcessorResult Run(const ingest::JobMessage& job, const std::atomic<bool>& cancel) = 0;
  // Told about each step of later runs (extraction, map steps, prefill,
  // generation); a processor with no steps to report ignores it.
  virtual void set_progress(ProgressFn progress) { (void)progress; }
};

class ProcessorRegistry {
 public:
  // AlreadyExists when a processor of that name is registered.
  Status Add(std::unique_ptr<Processor> processor);
  Processor* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, std::unique_ptr<Processor>> processors_;
};

// Reads one job document into a Document: path documents through
// ingest::ExtractDocument; inline ones are written to a private temporary
// file named after them first. Errors carry the document's label.
StatusOr<ingest::Document> LoadJobDocument(const ingest::JobDocument& doc,
                                           const ingest::ExtractOptions& options);

// The stable error code for a failed document load: "document.<kind>" for
// extraction errors ("document.encrypted", ...), else "document.error".
std::string DocumentErrorCode(const Status& status);

// `document-stats` (version 1): extracts every document and reports its
// pages, words and characters, without the model. A real, cheap pipeline
// for smoke tests of the queue and the store. Params (all optional):
//   "hold_ms": N   keep the job running N more milliseconds (cancellable),
//                  to exercise long-job handling in the consumer.
std::unique_ptr<Processor> MakeDocumentStatsProcessor(const ingest::ExtractOptions& options);

}  // namespace ellm::pipelines
