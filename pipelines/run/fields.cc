// Pipelines with `fields`: extraction with provenance, and comparisons
// computed in code (pipeline_spec.h, PipelineSpec::Field).
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ellm/pipelines/contracts.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "run/pipeline_internal.h"

namespace ellm::pipelines {
namespace {

using ordered_json = nlohmann::ordered_json;
using internal::AddGeneration;
using internal::FileName;
using internal::kMargin;
using internal::Trim;
using internal::Vars;

// A field's answer ends with its sentence or line.
const std::vector<std::string> kFieldStops = {". ", ".\n", "\n", "; "};

ordered_json Faithfulness(const std::vector<FieldValue>& values) {
  int present = 0, verified = 0, swapped = 0, conflicts = 0;
  for (const FieldValue& v : values) {
    present += v.present();
    verified += v.verified();
    conflicts += v.role_conflict;
    swapped += v.role_note.rfind("swapped", 0) == 0;
  }
  return {{"fields", values.size()},
          {"answered", present},
          {"verified", verified},
          {"roles_swapped", swapped},
          {"role_conflicts", conflicts}};
}

}  // namespace

PipelineResult PipelineProcessor::ExtractFields(const PipelineRequest& job, const PipelineDoc& doc,
                                                const std::atomic<bool>& cancel, PipelineOutput* r,
                                                std::vector<FieldValue>* values) {
  auto count = [&](const std::string& t) { return generator_->CountTokens(t); };
  const std::vector<Page> pages = SplitPages(doc.text);
  std::vector<TextGenerator::Section> sections;
  int64_t answer_room = 0;
  for (const PipelineSpec::Field& f : spec_.fields) {
    // Each field is asked right after the document (the document's KV is
    // kept, not prefilled again): one runaway answer cannot lead the next.
    sections.push_back({"\n" + f.lead, f.max_tokens, kFieldStops, /*from_prompt=*/true});
    answer_room += f.max_tokens + count(f.lead) + 4;
  }
  PipelineDoc empty = doc;
  empty.text.clear();
  auto overhead = RenderTemplate(spec_.prompt_template, Vars({empty}, job.params_json));
  if (!overhead.ok()) return PipelineResult::Failed("pipeline_error", overhead.status().message());
  const int64_t available =
      generator_->context() - answer_room - count(*overhead) - count(spec_.system_prompt) - kMargin;
  std::vector<std::string> chunks = {doc.text};
  if (doc.tokens > available) {
    if (spec_.overflow == OverflowStrategy::kFail || available < 64) {
      return PipelineResult::Failed("context_overflow",
                                    "'" + doc.title + "' has " + std::to_string(doc.tokens) +
                                        " tokens; the context leaves room for " +
                                        std::to_string(std::max<int64_t>(available, 0)));
    }
    // Each field is asked of every chunk; the first answer found in the
    // document wins (a value is on some page, not spread over the text).
    chunks = spec_.overflow == OverflowStrategy::kTruncate
                 ? std::vector<std::string>{FirstForBudget(doc.text, available, count)}
                 : SplitForBudget(doc.text, available, count);
  }
  values->assign(spec_.fields.size(), FieldValue{});
  for (size_t k = 0; k < chunks.size(); ++k) {
    PipelineDoc part = doc;
    part.text = chunks[k];
    auto prompt = RenderTemplate(spec_.prompt_template, Vars({part}, job.params_json));
    if (!prompt.ok()) return PipelineResult::Failed("pipeline_error", prompt.status().message());
    // The document's block may recur in other jobs (a contract compared
    // with several others): offer it to the prefix cache.
    size_t shared = prompt->find(part.text);
    shared = shared == std::string::npos ? 0 : shared + part.text.size();
    auto g = generator_->GenerateSections(spec_.system_prompt, *prompt, spec_.format,
                                          spec_.generation, sections, cancel, progress_,
                                          {.chars = shared, .cache = spec_.prefix_cache});
    if (!g.ok()) {
      return PipelineResult::FailedWith("engine_error", g.status().ToString(), g.status());
    }
    if (g->cancelled) return PipelineResult::Cancelled();
    AddGeneration(*r, *g);
    for (size_t i = 0; i < spec_.fields.size() && i < g->sections.size(); ++i) {
      FieldValue v =
          ResolveField(spec_.fields[i], OwnAnswer(spec_.fields, i, g->sections[i]), pages);
      FieldValue& best = (*values)[i];
      if ((v.verified() && !best.verified()) || (v.present() && !best.present()) ||
          (k == 0 && !best.present())) {
        best = std::move(v);
      }
    }
  }
  // The document's own defined terms ("X (the Buyer)") decide which party
  // is which; a small model swaps them.
  BindRoles(spec_.fields, values, pages);
  if (chunks.size() > 1) {
    r->strategy = "chunked (" + std::to_string(chunks.size()) + " chunks per document)";
  }
  return {};
}

PipelineResult PipelineProcessor::RunFields(const PipelineRequest& job,
                                            const std::vector<PipelineDoc>& docs,
                                            PipelineOutput out, const std::atomic<bool>& cancel) {
  PipelineOutput& r = out;
  r.strategy = "single-pass";
  std::vector<std::vector<FieldValue>> values(docs.size());
  for (size_t d = 0; d < docs.size(); ++d) {
    PipelineResult step = ExtractFields(job, docs[d], cancel, &r, &values[d]);
    if (step.cancelled || !step.error_code.empty()) return step;
  }
  ordered_json result = ordered_json::object();
  std::string text;
  if (docs.size() == 1) {
    result["fields"] = FieldsJson(spec_.fields, values[0]);
    result["faithfulness"] = Faithfulness(values[0]);
    text = "## Key terms\n\n" + RenderFieldsTable(spec_.fields, values[0]);
  } else {
    const std::vector<FieldValue>&a = values[0], &b = values[1];
    ordered_json rows = ordered_json::array();
    ordered_json fa = FieldsJson(spec_.fields, a), fb = FieldsJson(spec_.fields, b);
    int differ = 0;
    for (size_t i = 0; i < spec_.fields.size(); ++i) {
      const Agreement g = CompareField(a[i], b[i]);
      differ += g != Agreement::kSame && g != Agreement::kInNeither;
      const std::string& name = spec_.fields[i].name;
      rows.push_back({{"field", name},
                      {"label", spec_.fields[i].label},
                      {"status", AgreementName(g)},
                      {"a", fa[name]},
                      {"b", fb[name]}});
    }
    const std::string name_a = FileName(out.documents[0].label);
    const std::string name_b = FileName(out.documents[1].label);
    result["documents"] = {{"A", name_a}, {"B", name_b}};
    result["comparison"] = std::move(rows);
    result["faithfulness"] = {{"A", Faithfulness(a)}, {"B", Faithfulness(b)}};
    text = "A: " + name_a + " (" + docs[0].title + ")\nB: " + name_b + " (" + docs[1].title +
           ")\n\n## Key terms compared\n\n" + RenderComparisonTable(spec_.fields, a, b);
    // Clause by clause, computed from each contract's own structure
    // (contracts.h): what the fixed terms above cannot name.
    const ContractComparison clauses =
        CompareContracts(SplitPages(docs[0].text), SplitPages(docs[1].text));
    result["clauses"] = ComparisonJson(clauses);
    text += "\n## Clauses compared\n\n" + ComparisonMarkdown(clauses);
    const std::string clause_differences = ComparisonDifferences(clauses);
    differ += static_cast<int>(!clause_differences.empty());
    const std::string differences = DifferencesList(spec_.fields, a, b) + clause_differences;
    if (!spec_.differences_prompt.empty() && differ > 0) {
      PipelineResult prose = WriteDifferences(differences, docs, cancel, r, result, text);
      if (prose.cancelled || !prose.error_code.empty()) return prose;
    }
  }
  r.output_json = result.dump();
  r.output_text = spec_.output == OutputForm::kJson ? result.dump(2) : Trim(text);
  return Finish(std::move(out));
}

}  // namespace ellm::pipelines
