// What `ellm summarize`, `ellm compare` and `ellm batch` share: the runtime
// opened from flags, the job documents for local files, and a progress line
// for terminals.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ellm/app/runtime.h"
#include "ellm/pipelines/generator.h"
#include "flags.h"

namespace ellm::cli {

// The runtime (app/runtime.h) for local files. Flags it reads: --config
// (else /etc/ellm/ellm.yaml when present, else the defaults) and over it
// --model --db --pipelines --ctx --threads --chat-template and the KV flags
// (kv_flags.h, over the config's model: section). Without a config
// file the store is $XDG_DATA_HOME/ellm/ellm.db (its directory created) with
// the prefix cache beside it. `pipelines`: those the command will run; when
// it names some and none of them needs a model (document-stats), no model is
// opened or required. Empty: the model is opened.
StatusOr<std::unique_ptr<app::Runtime>> OpenLocalRuntime(
    const Flags& f, const std::vector<std::string>& pipelines = {});

// One progress line on stderr, redrawn in place; silent when disabled.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { Clear(); }
  void Update(const pipelines::Progress& p);
  void Clear();

 private:
  bool enabled_;
  std::string stage_;
  std::chrono::steady_clock::time_point stage_start_{}, last_{};
};

// The job documents for local files (resolved; errors name the file).
StatusOr<std::vector<ingest::JobDocument>> LocalDocuments(const std::vector<std::string>& files);

}  // namespace ellm::cli
