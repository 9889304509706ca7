// Helpers shared by the pipeline runner's files (pipeline_processor.cc,
// fields.cc); not part of the pipelines' interface.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ellm/pipelines/generator.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/pipelines/processor.h"

namespace ellm::pipelines::internal {

// Tokens kept free besides the answer: BOS, chat markers, rounding.
constexpr int64_t kMargin = 32;

// Adds a generation's token counts and times to a result.
void AddGeneration(PipelineOutput& r, const Generation& g);

// The prompt placeholders' values for `docs` and the job's params.
std::map<std::string, std::string> Vars(const std::vector<PipelineDoc>& docs,
                                        const std::string& params_json);

std::string Trim(std::string s);

// "contract-a.pdf" for "/inbox/contract-a.pdf" or "inline:contract-a.pdf".
std::string FileName(const std::string& path);

}  // namespace ellm::pipelines::internal
