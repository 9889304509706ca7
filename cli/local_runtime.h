// The pieces `ellm summarize`, `ellm compare` and `ellm batch` share: the
// configuration (--config, else /etc/ellm/ellm.yaml when present), the model,
// the pipelines, the job store, and a progress line for terminals.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ellm/app/config.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/store/job_store.h"
#include "flags.h"

namespace ellm::cli {

// Flags it reads: --config --model --db --pipelines --ctx --threads
// --chat-template (over the config's model.chat_template).
struct LocalRuntime {
  app::Config config;
  std::string db;
  std::string pipelines_dir;
  std::unique_ptr<store::JobStore> store;
  std::unique_ptr<pipelines::Generator> generator;
  pipelines::ProcessorRegistry registry;

  static StatusOr<std::unique_ptr<LocalRuntime>> Open(const Flags& f);
  // NotFound listing the pipelines there are.
  StatusOr<pipelines::Processor*> Find(const std::string& pipeline);
};

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
