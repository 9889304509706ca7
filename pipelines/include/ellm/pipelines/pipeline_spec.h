// A pipeline is data: a YAML file naming a prompt, generation settings and
// an output form. This header holds the parsed, validated form and the
// loader; running a pipeline lives elsewhere in pipelines/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/pipelines/facts.h"

namespace ellm::pipelines {

enum class OutputForm { kMarkdown, kJson };
enum class OverflowStrategy { kMapReduce, kTruncate, kFail };
// kPlain: the rendered prompt is the model's input as is (a completion
// prompt; works with base and instruction-tuned models alike). kChat: the
// system prompt and prompt become one user turn in the model's chat template.
enum class PromptFormat { kPlain, kChat };
// The JSON types an output field may be declared with.
enum class JsonType { kString, kNumber, kBoolean, kArray, kObject };

struct GenerationSettings {
  int max_tokens = 1024;
  double temperature = 0.0;  // 0 = greedy
  double top_p = 1.0;
  int top_k = 0;                // 0 = off
  double repeat_penalty = 1.0;  // 1 = off
  // Stop when the model repeats a whole line it already wrote (small
  // models loop); the repeat is not kept.
  bool stop_on_repeated_line = true;
  std::vector<std::string> stop;
  // A JSON Schema (its JSON text): the answer is generated under it
  // (grammar-constrained decoding), so it always parses and validates;
  // stop strings and the repeated-line stop do not apply then. Empty: free.
  std::string json_schema;
};

struct PipelineSpec {
  std::string name;     // [a-z0-9-]+, unique among loaded pipelines
  std::string version;  // recorded with every result
  std::string source;   // the file it came from
  std::string system_prompt;
  std::string prompt_template;  // {{placeholders}}, see RenderTemplate
  int min_documents = 1;
  int max_documents = 1;
  GenerationSettings generation;
  OutputForm output = OutputForm::kMarkdown;
  OverflowStrategy overflow = OverflowStrategy::kMapReduce;
  PromptFormat format = PromptFormat::kPlain;
  // Appended to the rendered prompt and put back in front of the generated
  // text: steers the answer's start (e.g. "{\"parties\": [" for JSON).
  std::string output_prefix;
  // output: json — the keys the object must have and their types.
  std::vector<std::pair<std::string, JsonType>> schema;
  // Map step of map-reduce: summarises one chunk. Placeholders: {{chunk}}
  // (page-marked text), {{part}}, {{parts}}, {{title}}. The reduce step is
  // the main prompt with the partial summaries as its documents.
  std::string map_prompt =
      "{{chunk}}\n\nNotes on part {{part}} of {{parts}} of \"{{title}}\": the key facts and "
      "figures, each with its page.\n-";
  int map_max_tokens = 256;
  // A document longer than this many tokens is summarised section-wise
  // (map-reduce) even when it fits the context: a small model digests a
  // few thousand tokens well and 28K not at all. Rules by model: `model`
  // is matched case-insensitively against the model's general.name and file
  // name ("" = any model); the first match wins; tokens 0 = only the
  // context limits single-pass. YAML: a number, or a mapping
  // {"gemma-3-270m": 6144, default: 0}. A job's params may override it
  // (params.single_pass_max_tokens).
  struct SinglePassRule {
    std::string model;
    int64_t tokens = 0;
  };
  std::vector<SinglePassRule> single_pass_max_tokens;
  // A one-document Markdown pipeline with `outline: HEADING` ends its
  // answer with that section: one line per top-level numbered section of
  // the document (statements.h DocumentOutline) with its pages and a
  // sentence the model writes from that section alone ("This section ..."),
  // kept only when the section's pages support it and its figures are the
  // section's own (or its heading's or the document title's).
  std::string outline;
  // With `outline`: up to this many of each section's own key terms
  // (statements.h SectionKeyTerms), each with its page, after the sentence.
  // 0: none.
  int outline_terms = 0;
  // Output in sections, generated in one sequence after one prefill: each
  // section's heading ("## heading", markdown only) and lead are written,
  // then the model continues until a stop string or the section's
  // max_tokens. For output: json the leads carry the object's syntax and
  // the concatenation must parse. Empty: one answer after output_prefix.
  struct Section {
    std::string heading;  // "Key figures" -> "## Key figures\n"
    std::string lead;     // text the answer starts with, e.g. "-"
    int max_tokens = 128;
    // Replaces generation.stop for this section when not empty.
    std::vector<std::string> stop;
    // Every figure the section states is looked up in the source: a line
    // whose figures are all found gets the page as " [p. N]"; a line with a
    // figure found nowhere is removed and listed in the result's
    // `unverified` (facts.h says what counts as the same figure).
    bool verify_figures = false;
    // Every sentence is traced to the page that holds most of its content
    // words and states its figures (statements.h SupportingPage): a
    // supported sentence gets " [p. N]",
    // one no page supports is removed and listed in the result's
    // `unsupported`. `verify: [figures, statements]` does both.
    bool verify_statements = false;
    // `extract: purpose | figures | risks | conclusions`: when nothing the
    // model wrote for the section survives the checks, the section shows
    // the document's own sentences of that kind instead, quoted, with their
    // pages (backbone.h), listed in the result's `extracted`; when some of
    // its prose survives (not its figure lines), one such sentence joins
    // it. Empty: none.
    std::string extract;
    int extract_sentences = 0;  // how many; 0: the part's default
  };
  std::vector<Section> sections;
  // `kinds:` — the summary fits the document: the sections above are a
  // report's; a manual or a contract gets its own (in this order). Each
  // job's document is classified (document_kind.h) unless its params name
  // the kind ("kind": "manual"); the result says which was used. Empty: no
  // classification.
  std::vector<std::pair<std::string, std::vector<Section>>> kinds;
  // Extraction with provenance: each document is read on its own, each field
  // answered after its lead (one prefill, fields in order), the answer's
  // value of `type` kept, then located in the document (facts.h Locate)
  // with its page and source span; a value found nowhere stays, marked
  // unverified. With two documents the fields are compared in code (same /
  // different / missing) into a table whose cells cite their pages ("B
  // p.7"). Excludes sections, output_prefix and generation.json_schema.
  struct Field {
    std::string name;   // [a-z0-9_]+, the key in the result JSON
    std::string label;  // "Total price": the table's row name
    FactKind type = FactKind::kText;
    std::string lead;  // "According to the contract, the total price is"
    // Words that stand near the value in the source ("price", "pay"): of
    // several places where the value occurs, one beside them is cited.
    std::vector<std::string> keywords;
    int max_tokens = 32;
  };
  std::vector<Field> fields;
  // `compare: clauses`: two contracts compared clause by clause, for any
  // kind of contract (contracts.h): the key-term table is a view over that
  // comparison, computed, and the model writes only the prose of
  // differences_prompt. Needs documents {min: 2, max: 2}; excludes fields
  // and sections.
  bool compare_clauses = false;
  // Two documents with fields: the prompt for the short prose under the
  // table, written from the computed differences alone (no document in
  // context). Placeholders: {{differences}} (one line per term), {{title_a}},
  // {{title_b}}. Empty: the table only.
  std::string differences_prompt;
  // Written after differences_prompt and kept in front of the prose: the
  // sentence the model completes ("The most important change is that").
  std::string differences_lead;
  int differences_max_tokens = 96;
  // Opt-in reuse of a document's KV state across jobs (the generator's
  // prefix cache, kv.prefix_cache_dir): a single-pass prompt offers the
  // text up to the end of its first document, and with fields each
  // document's prompt up to the end of that document; the state is saved
  // to disk and restored when a later job's prompt starts the same. Off by
  // default: a saved state encodes the document it was computed from, so
  // it is as sensitive as the document.
  bool prefix_cache = false;
};

// Loads and validates one pipeline file. Errors name the file and, where
// the YAML parser knows it, the line.
StatusOr<PipelineSpec> LoadPipelineFile(const std::string& path);
// Same, from text already read; `source` stands in for the file name.
StatusOr<PipelineSpec> ParsePipeline(const std::string& yaml_text, const std::string& source);

// Replaces each {{name}} in `text` with vars.at(name). An unknown name or an
// unclosed "{{" is an error naming it; "{{{{" writes a literal "{{".
StatusOr<std::string> RenderTemplate(const std::string& text,
                                     const std::map<std::string, std::string>& vars);

}  // namespace ellm::pipelines
