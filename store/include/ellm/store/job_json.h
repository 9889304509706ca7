// The JSON form of a stored result, shared by the daemon's result events and
// `ellm jobs show --json`, so both say the same thing the same way:
//   {"text", "json" (when structured, parsed), "model", "pipeline_version",
//    "strategy", "prompt_tokens", "generated_tokens", "prefill_ms", "decode_ms"}
#pragma once

#include <nlohmann/json.hpp>

#include "ellm/store/job_store.h"

namespace ellm::store {

nlohmann::json ResultToJson(const ResultRecord& result);

// A document as both print it: {"ordinal", "path", "sha256", "pages",
// "tokens", "ocr_pages": [{"page", "confidence", "note"}]} ("ocr_pages"
// empty when every page was read from its text).
nlohmann::json DocumentToJson(const DocumentRecord& document);

// The documents table's ocr_pages column: nullopt for none; a column that
// does not parse (written by hand) reads as none.
std::optional<std::string> OcrPagesColumn(const std::vector<OcrPageRecord>& pages);
std::vector<OcrPageRecord> OcrPagesFromColumn(const std::string& column);

// A whole job as `ellm jobs show --json` and the HTTP API's /v1/jobs/{id}
// print it: id, pipeline, status, attempts, params, source, times, error,
// result, documents, events.
nlohmann::json JobToJson(const JobRecord& job);

}  // namespace ellm::store
