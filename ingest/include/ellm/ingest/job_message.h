// The job message, version 1: what producers put on the jobs topic (JSON,
// one job per message, keyed by the job id). Documented in the README.
//
//   {"version": 1,                       optional; 1 is the only version
//    "id": "q3-report-2026",             required; 1-200 chars [A-Za-z0-9._:-]
//    "pipeline": "summarize-report",     required; a pipeline the daemon knows
//    "documents": [                      required; 1..max_documents entries
//      {"path": "/srv/reports/q3.pdf"},  a file under an allowed root, or
//      {"name": "memo.txt", "content_base64": "..."}   inline bytes
//    ],
//    "params": {...},                    optional object, passed to the pipeline
//    "reply_to": "team-a.results",       optional topic for the result event
//    "timeout_s": 600}                   optional; seconds one attempt may run
//                                        (a positive integer; jobs.timeout_s caps it)
//
// Validation is strict: unknown keys, wrong types, an unknown pipeline,
// oversized inline data, and paths that resolve (after symlinks) outside the
// allowed roots are all errors with a stable code and a message that names
// the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ellm::ingest {

struct JobDocument {
  // For path documents: the path as given and its canonical form (symlinks
  // resolved), which is what gets opened. For inline ones: `name` and bytes.
  std::string path;
  std::string resolved_path;
  // The canonical allowed root resolved_path was found under; the document
  // is opened beneath it (ingest::ExtractDocumentBeneath).
  std::string allowed_root;
  std::string name;
  std::string inline_bytes;
  bool is_inline = false;
  // "inline:<name>" or the path as given: how the store records it.
  std::string Label() const { return is_inline ? "inline:" + name : path; }
};

struct JobMessage {
  std::string id;
  std::string pipeline;
  std::vector<JobDocument> documents;
  std::string params_json = "{}";  // compact JSON object
  std::optional<std::string> reply_to;
  std::optional<int64_t> timeout_s;  // > 0 when set
};

struct JobMessageLimits {
  std::set<std::string> pipelines;         // the names the daemon serves
  std::vector<std::string> allowed_roots;  // directories documents may live in
  size_t max_inline_bytes = 8u << 20;      // decoded size, per document
  size_t max_documents = 32;
  size_t max_message_bytes = 64u << 20;
  // Topics a message's reply_to may name: exact names, or prefixes ending
  // in '*' ("team-*"). Empty: any legal name. Either way never Kafka's
  // internal topics ("__consumer_offsets", ...) nor `reserved_topics`
  // (the daemon's jobs and dead-letter topics: a result there would loop
  // back as a job or pass for a refused one).
  std::vector<std::string> reply_topics;
  std::set<std::string> reserved_topics;
};

// Whether `topic` may be a reply_to under `limits` (the reason when not).
std::optional<std::string> ReplyToRefusal(const std::string& topic, const JobMessageLimits& limits);

// Stable error codes (stored in jobs.error_code; append-only):
//   invalid_json, invalid_message, unsupported_version, unknown_pipeline,
//   inline_too_large, path_not_allowed, document_not_found,
//   document_unreadable, key_mismatch, reply_to_not_allowed.
struct ParsedJob {
  JobMessage message;      // filled as far as parsing got (id may be empty)
  std::string error_code;  // empty when the message is valid
  std::string error;       // for people: what is wrong and where
  bool ok() const { return error_code.empty(); }
};

// Jobs submitted over HTTP (POST /v1/jobs, app/http_jobs.cc) are stored
// under this prefix and the client's id, so that an HTTP job can never
// occupy, answer for or read a Kafka job, nor the other way round: a
// message's own id may not start with it (invalid_message).
inline constexpr std::string_view kHttpJobIdPrefix = "http:";

// `key` is the Kafka message key; when non-empty it must equal the id.
ParsedJob ParseJobMessage(std::string_view payload, std::string_view key,
                          const JobMessageLimits& limits);

// Decodes standard base64 (RFC 4648, '=' padding, no line breaks);
// nullopt on any invalid character or length.
std::optional<std::string> DecodeBase64(std::string_view text);
std::string EncodeBase64(std::string_view bytes);

}  // namespace ellm::ingest
