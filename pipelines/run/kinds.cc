// What a job's params and its documents choose: the kind of summary
// (pipeline_spec.h `kinds:`: which kind's processor runs the loaded
// documents) and the single-pass limit.
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "ellm/base/json.h"
#include "ellm/pipelines/document_kind.h"
#include "ellm/pipelines/pipeline_processor.h"

namespace ellm::pipelines {

PipelineResult PipelineProcessor::RunKind(const PipelineRequest& job, std::vector<PipelineDoc> docs,
                                          PipelineOutput out, const std::atomic<bool>& cancel) {
  // The summary fits the document: the kind the job names, else the one
  // its words say; a report's sections are this pipeline's own.
  DocumentKind kind{"", "the job's params"};
  StatusOr<nlohmann::json> params = ParseJson(job.params_json);
  if (params.ok() && params->is_object() && params->contains("kind")) {
    const nlohmann::json& k = (*params)["kind"];
    const std::string named = k.is_string() ? k.get<std::string>() : "";
    if (named != "auto") kind.kind = named;
  }
  if (kind.kind.empty()) {
    kind = ClassifyDocument(docs[0].title, SplitPages(docs[0].text), docs[0].headings.size());
  }
  PipelineProcessor* runner = kind.kind == "report" ? this : nullptr;
  for (const auto& [name, variant] : variants_) {
    if (name == kind.kind) runner = variant.get();
  }
  if (runner == nullptr) {
    std::string known = "auto, report";
    for (const auto& [name, variant] : variants_) known += ", " + name;
    return PipelineResult::Failed("invalid_params", "params.kind '" + kind.kind +
                                                        "' is not a kind of pipeline '" +
                                                        spec_.name + "' (" + known + ")");
  }
  PipelineResult result = runner->RunLoaded(job, std::move(docs), std::move(out), cancel);
  if (result.output) {
    StatusOr<nlohmann::ordered_json> json =
        ParseOrderedJson(result.output->output_json.value_or("{}"));
    if (json.ok() && json->is_object()) {
      (*json)["kind"] = {{"name", kind.kind},
                         {"from", kind.why == "the job's params" ? "params" : "detected"},
                         {"why", kind.why}};
      result.output->output_json = json->dump();
    }
  }
  return result;
}

std::pair<std::string, int64_t> PipelineProcessor::SinglePassLimit(
    const std::string& params_json) const {
  StatusOr<nlohmann::json> params = ParseJson(params_json);
  if (params.ok() && params->is_object() && params->contains("single_pass_max_tokens")) {
    const auto& v = (*params)["single_pass_max_tokens"];
    int64_t tokens = 0;
    if (v.is_number_integer()) tokens = v.get<int64_t>();
    if (v.is_string()) tokens = std::atoll(v.get<std::string>().c_str());
    return {"the job's params", tokens};
  }
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string name = lower(generator_->model_name());
  const std::string file = lower(std::filesystem::path(generator_->model_path()).filename());
  for (const PipelineSpec::SinglePassRule& rule : spec_.single_pass_max_tokens) {
    const std::string m = lower(rule.model);
    if (m.empty()) return {"pipeline " + spec_.name + ", any model", rule.tokens};
    if (name.find(m) != std::string::npos || file.find(m) != std::string::npos) {
      return {"pipeline " + spec_.name + ", models matching '" + rule.model + "'", rule.tokens};
    }
  }
  return {"", 0};
}

}  // namespace ellm::pipelines
