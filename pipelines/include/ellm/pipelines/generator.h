// Generator: the engine as pipelines use it: count tokens exactly, and turn
// one prompt into text (prefill in slices with progress and cancellation,
// then sampling until an end token, a stop string or max_tokens).
//
// One Generator per model; Generate calls are serialised by the engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/constraint.h"
#include "ellm/engine/engine.h"
#include "ellm/pipelines/pipeline_spec.h"
#include "ellm/pipelines/progress.h"

namespace ellm::pipelines {

struct GeneratorOptions {
  EngineOptions engine;
  // The session every generation runs in. Its n_ctx is the context each
  // generation may use, capped at the model's training context (a 128K
  // model runs at what is configured here).
  SessionOptions session{.n_ctx = 32768};
  // Prefix reuse: saved KV states of shared prompt prefixes (a contract
  // compared with many others is prefilled once), for the generations that
  // ask for it (SharedPrefix::cache). Empty = off. Created mode 0700 when
  // missing; each state file is 0600 (it encodes its document).
  std::string prefix_cache_dir;
  uint64_t prefix_cache_bytes = 1ull << 30;  // oldest states removed past this
};

struct Generation {
  std::string text;  // without the prompt, stop string excluded
  // GenerateSections: each section's answer alone (its lead excluded).
  std::vector<std::string> sections;
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t prefill_ms = 0;
  int64_t decode_ms = 0;
  int64_t reused_prefix_tokens = 0;  // restored from the prefix cache, not prefilled
  int64_t constraint_ms = 0;         // grammar-constrained decoding's own time
  bool cancelled = false;
};

// How many leading characters of a prompt other jobs may share (e.g. the
// first document of a comparison), and whether their KV state may go
// through the prefix cache.
struct SharedPrefix {
  size_t chars = 0;    // 0 = none
  bool cache = false;  // save / restore it (the pipeline opted in: prefix_cache)
};

// What pipelines need of a model: count tokens, and turn a prompt into
// text. Generator is the engine's; unit tests give pipelines a fake.
class TextGenerator {
 public:
  virtual ~TextGenerator() = default;

  // Tokens of `text` as a prompt would hold them (no BOS).
  virtual int64_t CountTokens(const std::string& text) const = 0;
  // The usable context: min(options.context, the model's training context).
  virtual int64_t context() const = 0;
  // "<file name>:<general.name>:<file size>": recorded with every result.
  virtual const std::string& fingerprint() const = 0;
  // The model's general.name and file path (per-model pipeline settings).
  virtual std::string model_name() const = 0;
  virtual std::string model_path() const = 0;

  // Runs `prompt` (already rendered; with `format` kChat it is wrapped in
  // the model's chat template with `system`). OutOfRange when the prompt
  // leaves no room for `settings.max_tokens` in the context.
  virtual StatusOr<Generation> Generate(const std::string& system, const std::string& prompt,
                                        PromptFormat format, const GenerationSettings& settings,
                                        const std::atomic<bool>& cancel,
                                        const ProgressFn& progress) = 0;

  // One prefill of `prompt`, then for each section: feed its `lead` text
  // and generate until a stop string, an end token or its max_tokens, in the
  // same sequence (later sections see earlier answers), or with
  // `from_prompt` right after the prompt again: the prompt's KV is kept and
  // what came after it is forgotten (Session::Truncate), so the section
  // sees neither the leads nor the answers before it and the prompt is not
  // prefilled again. Generation::text is lead + answer of every section,
  // concatenated.
  struct Section {
    std::string lead;
    int max_tokens = 128;
    std::vector<std::string> stop;  // empty: settings.stop
    bool from_prompt = false;
  };
  //
  // shared_prefix.chars > 0: the prompt is tokenized in two parts at that
  // point (with or without a cache, so results do not depend on cache hits
  // or on the cache being on), and with shared_prefix.cache and a prefix
  // cache the first part's KV state is restored when saved before, saved
  // otherwise. Without shared_prefix.cache nothing is read or written.
  virtual StatusOr<Generation> GenerateSections(const std::string& system,
                                                const std::string& prompt, PromptFormat format,
                                                const GenerationSettings& settings,
                                                const std::vector<Section>& sections,
                                                const std::atomic<bool>& cancel,
                                                const ProgressFn& progress,
                                                SharedPrefix shared_prefix = {}) = 0;
};

// One generation as the engine ran it, for a prompt log (`ellm summarize
// --log-prompts`): enough for another engine to repeat the same work (the
// same tokens, leads, limits and stops) and to compare its answers.
struct PromptRecord {
  std::string text;          // the prompt as rendered (chat template applied)
  bool chat = false;         // special tokens in `text` were parsed
  std::vector<TokenId> ids;  // its tokens as prefilled, BOS first
  std::vector<TextGenerator::Section> sections;
  std::vector<std::vector<TokenId>> lead_ids;  // each section's lead as fed (no BOS)
  GenerationSettings settings;
  Generation result;
  double seconds = 0;  // wall time of the whole generation, prefill included
};
using PromptLog = std::function<void(const PromptRecord&)>;

class Generator : public TextGenerator {
 public:
  static StatusOr<std::unique_ptr<Generator>> Load(const std::string& model_path,
                                                   const GeneratorOptions& options);

  int64_t CountTokens(const std::string& text) const override;
  int64_t context() const override { return context_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  std::string model_name() const override { return engine_->info().name; }
  std::string model_path() const override { return engine_->info().path; }
  const ModelInfo& info() const { return engine_->info(); }
  // The engine, for front doors that share the loaded model (the HTTP API
  // opens its own sessions on it and takes turns through engine().gate()).
  Engine& engine() const { return *engine_; }
  // KV cache bytes held in memory by the generator's session.
  uint64_t kv_bytes() const { return session_->kv_bytes(); }
  // The session's KV cache since the last generation began (spill included).
  KvStats kv_stats() const { return session_->kv_stats(); }
  // Called after every generation that completes (not cancelled, no error),
  // on the generating thread. Empty = off.
  void set_prompt_log(PromptLog log) { prompt_log_ = std::move(log); }

  StatusOr<Generation> Generate(const std::string& system, const std::string& prompt,
                                PromptFormat format, const GenerationSettings& settings,
                                const std::atomic<bool>& cancel,
                                const ProgressFn& progress) override;
  StatusOr<Generation> GenerateSections(const std::string& system, const std::string& prompt,
                                        PromptFormat format, const GenerationSettings& settings,
                                        const std::vector<Section>& sections,
                                        const std::atomic<bool>& cancel, const ProgressFn& progress,
                                        SharedPrefix shared_prefix = {}) override;

 private:
  // The prompt as the model sees it (chat template or system text before
  // it) and its tokens; n_prefix of them encode the shared prefix's
  // characters on their own (0: none).
  struct PromptTokens {
    std::string text;
    bool chat = false;
    std::vector<TokenId> ids;
    int64_t n_prefix = 0;
  };
  StatusOr<PromptTokens> Encode(const std::string& system, const std::string& prompt,
                                PromptFormat format, SharedPrefix shared_prefix) const;
  // Restores or prefills ids[0, n_prefix) through the prefix cache (only
  // when `cache` and the cache is on); returns the tokens restored (0 when
  // prefilled here). `progress` (may be empty) is told the positions of
  // `ids` prefilled when the prefix is computed rather than restored.
  StatusOr<int64_t> PrefixFromCache(std::span<const TokenId> ids, int64_t n_prefix, bool cache,
                                    const ProgressFn& progress);
  std::string PrefixPath(std::span<const TokenId> prefix) const;
  void TrimPrefixCache() const;

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> session_;
  GeneratorOptions options_;
  int64_t context_ = 0;
  std::string fingerprint_;
  // The constraint for the last settings.json_schema (built once per schema:
  // it sorts the vocabulary).
  std::string constraint_schema_;
  std::unique_ptr<JsonConstraint> constraint_;
  PromptLog prompt_log_;
};

}  // namespace ellm::pipelines
