// `compare: clauses`: two contracts compared clause by clause
// (contracts.h), the key-term table a view over that comparison, and the
// model's prose about the computed differences, each sentence checked
// against them.
#include <nlohmann/json.hpp>

#include "ellm/pipelines/contracts.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/pipelines/provenance.h"
#include "run/pipeline_internal.h"

namespace ellm::pipelines {

using ordered_json = nlohmann::ordered_json;

PipelineResult PipelineProcessor::WriteDifferences(const std::string& differences,
                                                   const std::vector<PipelineDoc>& docs,
                                                   const std::atomic<bool>& cancel,
                                                   PipelineOutput& r, ordered_json& result,
                                                   std::string& text) {
  auto prompt = RenderTemplate(
      spec_.differences_prompt,
      {{"differences", differences}, {"title_a", docs[0].title}, {"title_b", docs[1].title}});
  if (!prompt.ok()) return PipelineResult::Failed("pipeline_error", prompt.status().message());
  GenerationSettings settings = spec_.generation;
  settings.max_tokens = spec_.differences_max_tokens;
  settings.stop.push_back("\n");  // a short paragraph: one line
  auto g = generator_->GenerateSections(spec_.system_prompt, *prompt, spec_.format, settings,
                                        {{spec_.differences_lead, settings.max_tokens}}, cancel,
                                        progress_);
  if (!g.ok()) return PipelineResult::FailedWith("engine_error", g.status().ToString(), g.status());
  if (g->cancelled) return PipelineResult::Cancelled();
  internal::AddGeneration(r, *g);
  int dropped = 0;
  const std::string prose = KeepSupportedSentences(g->text, differences, &dropped);
  result["differences_prose"] = {{"kept", prose}, {"dropped_sentences", dropped}};
  if (!prose.empty()) text += "\n## Differences\n\n" + prose + "\n";
  return {};
}

PipelineResult PipelineProcessor::RunClauseComparison(const std::vector<PipelineDoc>& docs,
                                                      PipelineOutput out,
                                                      const std::atomic<bool>& cancel) {
  PipelineOutput& r = out;
  r.strategy = "clause comparison";
  const ContractComparison clauses =
      CompareContracts(SplitPages(docs[0].text), SplitPages(docs[1].text));
  const std::vector<KeyTermRow> terms = KeyTermsView(clauses);
  const std::string name_a = internal::FileName(out.documents[0].label);
  const std::string name_b = internal::FileName(out.documents[1].label);
  ordered_json result = ordered_json::object();
  result["documents"] = {{"A", name_a}, {"B", name_b}};
  result["comparison"] = KeyTermsJson(terms);
  result["clauses"] = ComparisonJson(clauses);
  std::string text = "A: " + name_a + " (" + docs[0].title + ")\nB: " + name_b + " (" +
                     docs[1].title + ")\n\n## Key terms compared\n\n" + KeyTermsMarkdown(terms) +
                     "\n## Clauses compared\n\n" + ComparisonMarkdown(clauses);
  const std::string differences = KeyTermsDifferences(terms) + ComparisonDifferences(clauses);
  if (!spec_.differences_prompt.empty() && !differences.empty()) {
    PipelineResult prose = WriteDifferences(differences, docs, cancel, r, result, text);
    if (prose.cancelled || !prose.error_code.empty()) return prose;
  }
  r.output_json = result.dump();
  r.output_text = spec_.output == OutputForm::kJson ? result.dump(2) : internal::Trim(text);
  return Finish(std::move(out));
}

}  // namespace ellm::pipelines
