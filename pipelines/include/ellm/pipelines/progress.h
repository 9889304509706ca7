// What a running job tells its caller, for progress lines and status.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ellm::pipelines {

// `stage` is "extract", "map N/M", "outline N/M", "prefill" or "generate";
// `done`/`total` count its steps or tokens (total = max_tokens for generate;
// prefill: positions of the whole prompt, a cached or shared prefix included).
struct Progress {
  std::string stage;
  int64_t done = 0;
  int64_t total = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

}  // namespace ellm::pipelines
