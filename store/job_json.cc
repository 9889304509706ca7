#include "ellm/store/job_json.h"

#include "ellm/base/json.h"

namespace ellm::store {

nlohmann::json ResultToJson(const ResultRecord& r) {
  nlohmann::json out = {{"text", r.output_text},
                        {"model", r.model_fingerprint},
                        {"pipeline_version", r.pipeline_version},
                        {"strategy", r.strategy},
                        {"prompt_tokens", r.prompt_tokens},
                        {"generated_tokens", r.generated_tokens},
                        {"prefill_ms", r.prefill_ms},
                        {"decode_ms", r.decode_ms},
                        {"constraint_ms", r.constraint_ms}};
  if (r.output_json) {
    // Stored only after it parsed (PipelineProcessor checks it); a row
    // written by hand that does not parse is shown as its text.
    StatusOr<nlohmann::json> parsed = ParseJson(*r.output_json);
    out["json"] = parsed.ok() ? std::move(*parsed) : nlohmann::json(*r.output_json);
  }
  return out;
}

nlohmann::json DocumentToJson(const DocumentRecord& d) {
  nlohmann::json ocr = nlohmann::json::array();
  for (const OcrPageRecord& p : d.ocr_pages) {
    ocr.push_back({{"page", p.page}, {"confidence", p.confidence}, {"note", p.note}});
  }
  return {{"ordinal", d.ordinal},  {"path", d.path},          {"sha256", d.sha256},
          {"pages", d.page_count}, {"tokens", d.token_count}, {"ocr_pages", std::move(ocr)}};
}

std::optional<std::string> OcrPagesColumn(const std::vector<OcrPageRecord>& pages) {
  if (pages.empty()) return std::nullopt;
  return DocumentToJson({.ocr_pages = pages})["ocr_pages"].dump();
}

std::vector<OcrPageRecord> OcrPagesFromColumn(const std::string& column) {
  std::vector<OcrPageRecord> pages;
  if (column.empty()) return pages;
  StatusOr<nlohmann::json> parsed = ParseJson(column);
  if (!parsed.ok() || !parsed->is_array()) return pages;
  for (const nlohmann::json& p : *parsed) {
    if (!p.is_object()) continue;
    OcrPageRecord r;
    r.page = p.value("page", 0);
    r.confidence = p.value("confidence", 0);
    r.note = p.value("note", "");
    pages.push_back(std::move(r));
  }
  return pages;
}

nlohmann::json JobToJson(const JobRecord& j) {
  nlohmann::json out = {
      {"id", j.id},
      {"pipeline", j.pipeline},
      {"status", std::string(JobStatusName(j.status))},
      {"attempts", j.attempts},
      {"params", nullptr},
      {"source",
       {{"topic", j.source.topic}, {"partition", j.source.partition}, {"offset", j.source.offset}}},
      {"created_at", j.created_at},
      {"updated_at", j.updated_at},
      {"started_at", j.started_at},
      {"finished_at", j.finished_at}};
  // Stored from a checked message; a row that does not parse is shown as its text.
  StatusOr<nlohmann::json> params = ParseJson(j.params_json);
  out["params"] = params.ok() ? std::move(*params) : nlohmann::json(j.params_json);
  if (j.reply_to) out["reply_to"] = *j.reply_to;
  if (!j.error_code.empty()) out["error"] = {{"code", j.error_code}, {"message", j.error_message}};
  if (j.result) out["result"] = ResultToJson(*j.result);
  nlohmann::json docs = nlohmann::json::array();
  for (const auto& d : j.documents) docs.push_back(DocumentToJson(d));
  out["documents"] = docs;
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : j.events) {
    events.push_back({{"at", e.at}, {"kind", e.kind}, {"detail", e.detail}});
  }
  out["events"] = events;
  return out;
}

}  // namespace ellm::store
