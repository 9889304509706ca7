// PipelineProcessor: runs a YAML pipeline (PipelineSpec) on the engine.
//
//   1. Extract every document (sandboxed, see ingest/extract.h).
//   2. Budget: count tokens exactly; if system + prompt + documents + room
//      for the answer fit the context, one pass ("single-pass").
//   3. Otherwise (overflow: map-reduce) split each document at page and
//      paragraph boundaries into chunks that fit the map prompt, summarise
//      each chunk keeping its page markers, and run the main prompt on the
//      notes instead of the text; notes that still do not fit are reduced
//      again, up to kMaxLevels ("map-reduce"). overflow: truncate keeps the
//      start of each document; overflow: fail is an error.
//   4. Output: Markdown text, or a JSON object checked against the
//      pipeline's schema before it is stored. Sections with `verify:
//      figures` keep only lines whose figures are found in the source, each
//      cited with its page; the result JSON carries `faithfulness` and the
//      removed lines under `unverified`.
//
// A pipeline with `fields` runs instead: each document alone, one answer
// per field, each located in the document (provenance.h); two documents
// are compared in code.
//
// Template placeholders: {{document}} (the first document's page-marked
// text), {{documents}} (all, each under a "=== Document i: title ===" line),
// {{document_1}}..{{document_N}}, {{title}}, {{titles}}, {{document_count}},
// {{params}} (the job's params as JSON) and {{param.KEY}} for each string or
// number in params.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ellm/ingest/document.h"
#include "ellm/pipelines/generator.h"
#include "ellm/pipelines/pipeline_spec.h"
#include "ellm/pipelines/processor.h"
#include "ellm/pipelines/provenance.h"

namespace ellm::pipelines {

constexpr int kMaxLevels = 3;

// Validates `spec`'s templates (every placeholder known) before use.
Status CheckPipelineTemplates(const PipelineSpec& spec);

// Loads every *.yaml / *.yml file in `dir` (sorted by name); the first
// error names the file and line. Duplicate names are an error.
StatusOr<std::vector<PipelineSpec>> LoadPipelineDirectory(const std::string& dir);

// Splits page-marked text into pieces of at most `max_tokens` tokens (by
// `count`), at paragraph boundaries where possible. A piece that starts
// inside a page begins with that page's "[page N]" marker again. Greedy: a
// piece takes paragraphs (of an overlong paragraph, words) while the whole
// piece counts within the budget; the pieces are those of counting it
// whole at every step for any `count` that never falls as text is appended.
// `count` sees each paragraph on its own and a whole piece a few times
// (run/split_for_budget.cc): linear in the text when a concatenation counts
// about as its parts do, as with tokenizers.
std::vector<std::string> SplitForBudget(const std::string& text, int64_t max_tokens,
                                        const std::function<int64_t(const std::string&)>& count);
// SplitForBudget's first piece ("" for text without any), reading and
// counting only as far as it needs.
std::string FirstForBudget(const std::string& text, int64_t max_tokens,
                           const std::function<int64_t(const std::string&)>& count);

// Registers a PipelineProcessor for each spec, plus the built-in
// document-stats. `generator` must outlive `registry`; null (no model
// loaded): the specs are left out and only the pipelines that need no model
// are registered.
Status RegisterPipelines(const std::vector<PipelineSpec>& specs, TextGenerator* generator,
                         const ingest::ExtractOptions& extract, ProcessorRegistry* registry);

// Whether the pipeline named `name` runs the model: every pipeline but the
// built-in document-stats.
bool PipelineNeedsModel(std::string_view name);

// Where the shipped pipelines are: $ELLM_PIPELINES_DIR, else
// <executable>/../share/ellm/pipelines when it exists (installed), else the
// source tree's pipelines/defs (a build tree).
std::string DefaultPipelinesDir();

// One document as a pipeline sees it.
struct PipelineDoc {
  std::string title;
  std::string text;                       // page-marked, what the model reads (or map notes)
  int64_t tokens = 0;                     // of `text`, kept in step with it
  std::vector<ingest::Heading> headings;  // the file's own (ingest::Document::headings)
};

class PipelineProcessor : public Processor {
 public:
  // `generator` is shared by every pipeline of a daemon; it must outlive
  // the processor.
  PipelineProcessor(PipelineSpec spec, TextGenerator* generator, ingest::ExtractOptions extract);

  const std::string& name() const override { return spec_.name; }
  const std::string& version() const override { return spec_.version; }
  PipelineResult Run(const PipelineRequest& job, const std::atomic<bool>& cancel) override;

  // Told about extraction, map steps, prefill and generation.
  void set_progress(ProgressFn progress) override {
    for (auto& [kind, variant] : variants_) variant->set_progress(progress);
    progress_ = std::move(progress);
  }

 private:
  // Run's work; Run adds the OCR notes (NoteOcrPages) to what it returns.
  // With `kinds:`, the documents' kind picks the processor (variants_) that
  // runs RunLoaded, and the result JSON gets "kind".
  PipelineResult RunSteps(const PipelineRequest& job, const std::atomic<bool>& cancel);
  // RunLoaded's Markdown answer: cleaned, figure lines merged, checked,
  // the outline appended (into r); an empty result on success.
  using MappedLines = std::map<std::string, std::vector<std::string>>;
  PipelineResult MarkdownAnswer(const std::string& answer, const std::vector<PipelineDoc>& docs,
                                const std::vector<std::vector<Page>>& source_pages,
                                const std::atomic<bool>& cancel, MappedLines* mapped,
                                PipelineOutput* r);
  // With `kinds:`: the kind the job's params name, else ClassifyDocument's,
  // picks the processor (this one for a report, else variants_) whose
  // RunLoaded runs; the result JSON gets "kind" (run/kinds.cc).
  PipelineResult RunKind(const PipelineRequest& job, std::vector<PipelineDoc> docs,
                         PipelineOutput out, const std::atomic<bool>& cancel);
  // Everything after the documents are loaded.
  PipelineResult RunLoaded(const PipelineRequest& job, std::vector<PipelineDoc> docs,
                           PipelineOutput out, const std::atomic<bool>& cancel);
  // Each returns an empty result (neither output, error nor cancelled) on success.
  PipelineResult Load(const PipelineRequest& job, const std::atomic<bool>& cancel,
                      std::vector<PipelineDoc>* docs, PipelineOutput* out);
  // Replaces documents over their share of `available` with map notes
  // until all fit; sets r->strategy and adds the map steps' counts.
  // A one-document Markdown pipeline with sections maps section-wise: each
  // chunk gets the pipeline's own prompt and sections (figures checked).
  // `mapped` receives, per `verify: figures` section, the verified lines
  // of the first level's chunks (merged into the answer afterwards).
  // The single-pass limit for this job and model, with where it came from
  // (the job's params.single_pass_max_tokens, else the pipeline's first
  // rule matching the model); 0: none.
  std::pair<std::string, int64_t> SinglePassLimit(const std::string& params_json) const;
  // The `outline` section (PipelineSpec::outline) for a document's pages:
  // Markdown lines and their JSON; empty text when the document has no
  // numbered top-level sections. `figures`: each section's key figure line
  // as the model named it after its sentence, when all its figures are on
  // the section's pages (cited "[p. N]"), for the Key figures section.
  PipelineResult Outline(const PipelineDoc& doc, const std::vector<Page>& pages,
                         const std::atomic<bool>& cancel, PipelineOutput* r, std::string* text,
                         nlohmann::ordered_json* json, std::vector<std::string>* figures);
  PipelineResult MapReduce(std::vector<PipelineDoc>& docs, int64_t available,
                           const std::string& params_json, const std::atomic<bool>& cancel,
                           PipelineOutput* r, MappedLines* mapped);
  // A success: `out` stamped with the model and the pipeline's name/version.
  PipelineResult Finish(PipelineOutput out) const;
  // The generator's sections for spec_.sections (or one answer after
  // output_prefix).
  std::vector<TextGenerator::Section> GeneratorSections() const;
  // A pipeline with fields (run/fields.cc): each document's fields, located
  // in it; with two documents, compared. `out` holds the loaded documents.
  PipelineResult RunFields(const PipelineRequest& job, const std::vector<PipelineDoc>& docs,
                           PipelineOutput out, const std::atomic<bool>& cancel);
  // `compare: clauses` (run/compare.cc): two contracts compared clause by
  // clause, the key-term table a view over it; the model writes only the
  // prose.
  PipelineResult RunClauseComparison(const std::vector<PipelineDoc>& docs, PipelineOutput out,
                                     const std::atomic<bool>& cancel);
  // The model's prose about `differences` (spec_.differences_prompt), its
  // sentences checked against them: into result["differences_prose"] and a
  // "## Differences" section of `text`. Empty on success.
  PipelineResult WriteDifferences(const std::string& differences,
                                  const std::vector<PipelineDoc>& docs,
                                  const std::atomic<bool>& cancel, PipelineOutput& r,
                                  nlohmann::ordered_json& result, std::string& text);
  std::optional<std::pair<std::string, nlohmann::ordered_json>> VerifySections(
      const std::string& text, const std::vector<std::vector<Page>>& source) const;
  // One document's field answers (chunked when it does not fit), resolved.
  PipelineResult ExtractFields(const PipelineRequest& job, const PipelineDoc& doc,
                               const std::atomic<bool>& cancel, PipelineOutput* r,
                               std::vector<FieldValue>* values);

  PipelineSpec spec_;
  TextGenerator* generator_;
  ingest::ExtractOptions extract_;
  ProgressFn progress_;
  // One processor per `kinds:` entry: this spec with that kind's sections.
  std::vector<std::pair<std::string, std::unique_ptr<PipelineProcessor>>> variants_;
};

}  // namespace ellm::pipelines
