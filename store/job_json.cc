#include "ellm/store/job_json.h"

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
    auto parsed = nlohmann::json::parse(*r.output_json, nullptr, false);
    out["json"] = parsed.is_discarded() ? nlohmann::json(*r.output_json) : parsed;
  }
  return out;
}

}  // namespace ellm::store
