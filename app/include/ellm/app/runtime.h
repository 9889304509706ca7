// The runtime every front door opens once at start-up: the job store, the
// document extractor, the engine (through the pipelines' Generator) and the
// pipelines registered on it, all from one Config. ellmd opens it from its
// configuration file; `ellm summarize`, `compare` and `batch` from --config
// (or the defaults) with their flags as overrides.
//
// What stays with a front door: flags and config files, logging, signals,
// metrics, Kafka, RecoverInterrupted (only the daemon may requeue jobs a
// dead process left running).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ellm/app/config.h"
#include "ellm/base/status.h"
#include "ellm/ingest/extract.h"
#include "ellm/pipelines/generator.h"
#include "ellm/pipelines/processor.h"
#include "ellm/store/job_store.h"

namespace ellm::app {

// What a front door sets over the configuration; unset or empty: the
// configuration's value.
struct RuntimeOverrides {
  std::string model_path;          // model.path
  std::string store_path;          // store.path
  std::string pipelines_dir;       // pipelines.dir (empty there too: the shipped ones)
  std::string prefix_cache_dir;    // kv.prefix_cache_dir
  std::optional<int64_t> context;  // model.context
  std::optional<int64_t> threads;  // model.threads
  // Open no model and no engine: only the pipelines that need none
  // (pipelines::PipelineNeedsModel) are registered, and model.path need not
  // exist. For a front door asked to run only those (`ellm summarize
  // --pipeline document-stats`); ellmd never sets it.
  bool without_model = false;
};

// The part of start-up that failed, so that a front door can word its error
// and choose its exit code (ellmd: a missing model or a broken pipeline file
// is a configuration error, EX_CONFIG).
enum class RuntimeStage {
  kModel,      // the GGUF file (opened and its header checked)
  kStore,      // the SQLite job store
  kExtractor,  // the ellm-extract binary
  kPipelines,  // the pipeline files, or registering them
  kEngine,     // loading the model into the engine
};

// Everything is built once by OpenRuntime and torn down in reverse order
// (registry, generator, store). Not thread-safe: one job at a time, on one
// thread (the JobStore is one SQLite connection).
struct Runtime {
  Config config;  // as given, overrides not applied
  std::string model_path;
  std::string store_path;
  std::string pipelines_dir;
  std::string model_architecture;  // general.architecture, or "?"
  size_t model_tensors = 0;
  ingest::ExtractOptions extract;  // extractor_path resolved
  std::unique_ptr<store::JobStore> store;
  std::unique_ptr<pipelines::Generator> generator;
  std::unique_ptr<pipelines::ProcessorRegistry> registry;  // the pipelines at start-up
  // Held while a job runs the pipelines (one job at a time, whichever door
  // it came through: Kafka, the CLI, HTTP); API replies do not take it.
  std::mutex job_mutex;

  // The processor for `pipeline`, or NotFound listing the pipelines there are.
  StatusOr<pipelines::Processor*> Find(const std::string& pipeline) const;
  // A fresh registry from the pipeline files on the same generator (ellmd's
  // SIGHUP). The result must not outlive this runtime.
  StatusOr<std::unique_ptr<pipelines::ProcessorRegistry>> LoadPipelines() const;
};

// REQUIRES: config validated (LoadConfig/ParseConfig do it). Opens, in
// order: the model file (its header checked), the extractor, the pipeline
// files, the store (with jobs.max_attempts; its directory must exist), the
// engine (creating kv.spill_dir when a KV budget is set), the pipelines on
// it. With `overrides.without_model`: the extractor, the store and the
// pipelines that need no model (`generator` stays null). On error `*failed` (when not null) names
// the stage; the status is the stage's own, without a prefix.
StatusOr<std::unique_ptr<Runtime>> OpenRuntime(const Config& config,
                                               const RuntimeOverrides& overrides = {},
                                               RuntimeStage* failed = nullptr);

}  // namespace ellm::app
