// A pipeline is data: a YAML file naming a prompt, generation settings and
// an output form. This header holds the parsed, validated form and the
// loader; running a pipeline lives elsewhere in pipelines/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ellm/base/status.h"

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
  };
  std::vector<Section> sections;
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
