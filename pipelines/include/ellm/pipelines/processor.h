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

namespace ellm::pipelines {

// What a processor is asked to do, whichever door the job came through (a
// Kafka message, files on the CLI, an HTTP upload): app/ builds it.
struct PipelineRequest {
  std::string job_id;                          // names temporary files and logs
  std::vector<ingest::JobDocument> documents;  // in order; 1 or more
  std::string params_json = "{}";              // compact JSON object
};

// A page of an input document read by OCR: its number, the mean confidence
// in percent, and ingest's note ("low confidence", "no text found", ...).
struct OcrPageSummary {
  int page = 0;
  int confidence = 0;
  std::string note;
};

// One input document as the pipeline read it.
struct DocumentSummary {
  int ordinal = 0;
  std::string label;   // the path as given, or "inline:<name>"
  std::string sha256;  // hex of the bytes read
  int64_t page_count = 0;
  int64_t token_count = 0;
  std::vector<OcrPageSummary> ocr_pages;  // pages read by OCR (scans)
};

// The pages of `doc` read by OCR.
std::vector<OcrPageSummary> OcrPagesOf(const ingest::Document& doc);

// What a successful run says about its scanned pages, so that a summary of
// less than the document is never silent: pages OCR read with low
// confidence, found no text on, or stopped on. Appends to output_text a
// paragraph "Note: ..." naming each document and its pages, and to an
// output_json object a "warnings" array of the same sentences. Pages OCR
// read well add nothing.
struct PipelineOutput;
void NoteOcrPages(PipelineOutput* output);

// A successful run: the text (and JSON, for pipelines that produce it),
// what made it, and what it cost.
struct PipelineOutput {
  std::string output_text;
  std::optional<std::string> output_json;
  std::string model_fingerprint;
  std::string pipeline_name;
  std::string pipeline_version;
  std::string strategy;  // e.g. "single-pass", "map-reduce"
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t prefill_ms = 0;
  int64_t decode_ms = 0;
  int64_t constraint_ms = 0;  // of decode_ms: masks and accepts of a JSON schema
  std::vector<DocumentSummary> documents;
};

// Exactly one of: output set (success), error_code set (the job failed), or
// cancelled. A failure is permanent (the same request fails the same way
// again: a bad document, an invalid parameter, a context overflow) unless
// `transient` says the machine or a peer was at fault (disk full while
// spilling, out of memory, a failed fork of the extractor): then the job
// runner tries it again later, within jobs.max_attempts.
struct PipelineResult {
  std::optional<PipelineOutput> output;
  std::string error_code;  // stable, e.g. "document.encrypted" (append-only)
  std::string error;       // for people: what, which document, what to do
  // Generated text that explains `error`: the start of an answer that does
  // not parse (output_invalid). It carries document content, so it is kept
  // out of `error`: daemon logs show it at debug level only, while the
  // store, the result event and the CLI get ErrorWithAnswer().
  std::string error_answer;
  bool transient = false;  // with error_code: retrying may succeed
  bool cancelled = false;

  // `error`, then "; the answer began: " and error_answer when there is one.
  std::string ErrorWithAnswer() const {
    return error_answer.empty() ? error : error + "; the answer began: " + error_answer;
  }

  static PipelineResult Failed(std::string code, std::string message) {
    PipelineResult r;
    r.error_code = std::move(code);
    r.error = std::move(message);
    return r;
  }
  // A failure caused by `cause`: transient when IsTransient(cause), and then
  // named after its status code ("resource_exhausted", "unavailable")
  // instead of `code`, which names what a permanent failure was about.
  static PipelineResult FailedWith(std::string code, std::string message, const Status& cause);
  static PipelineResult Cancelled() {
    PipelineResult r;
    r.cancelled = true;
    return r;
  }
};

// Whether a failure with `status` may go away by itself: the machine ran
// short (ResourceExhausted: disk full, out of memory, out of file
// descriptors) or a peer was away (Unavailable: fork failed with EAGAIN, a
// broker timed out). A document's own limits are permanent whatever their
// code: extraction errors (reason "extract.*", e.g. the extractor's memory
// limit, which is ResourceExhausted) fail the same way every time.
bool IsTransient(const Status& status);

class Processor {
 public:
  virtual ~Processor() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& version() const = 0;
  // Runs `request`. Thread-compatible: one job at a time per processor.
  // Checks `cancel` between steps and returns Cancelled() soon after it is set.
  virtual PipelineResult Run(const PipelineRequest& request, const std::atomic<bool>& cancel) = 0;
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

// How messages for people name job document `index` (0-based) of `count`:
// "document 2 of 2 ('/srv/b.pdf')", counted from 1. (A message's JSON
// path, "documents[1]", stays 0-based.)
std::string DocumentName(size_t index, size_t count, const ingest::JobDocument& doc);

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
