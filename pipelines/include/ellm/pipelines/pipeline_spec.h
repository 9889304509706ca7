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

struct GenerationSettings {
  int max_tokens = 1024;
  double temperature = 0.0;  // 0 = greedy
  double top_p = 1.0;
  int top_k = 0;  // 0 = off
  std::vector<std::string> stop;
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
