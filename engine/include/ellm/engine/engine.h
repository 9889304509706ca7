// The engine's public face: load a model, open sessions, evaluate tokens.
//
//   auto engine = Engine::Load("model.gguf", {.threads = 2});
//   auto session = (*engine)->NewSession({.n_ctx = 8192});
//   auto ids = (*engine)->tokenizer().Encode(text, true, false);
//   (*session)->Eval(ids, LogitsFor::kLast, [&](int64_t i, std::span<const float> logits) {...});
//
// Thread safety: an Engine may serve several Sessions, but Eval calls are
// serialised on the engine's thread pool (one Eval at a time per Engine).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "ellm/base/status.h"
#include "ellm/engine/chat.h"
#include "ellm/engine/tokenizer.h"

namespace ellm {

namespace model {
class Model;
}
class ThreadPool;
class Session;

struct EngineOptions {
  int threads = 0;  // 0 = one per hardware thread
};

// How the KV cache stores keys and values; serialized in configs, append-only.
enum class KvType {
  kF16,  // default; attention then rounds Q and the softmax to f16 exactly as
         // llama.cpp's CPU backend does without flash attention
  kF32,  // no rounding at all
};

struct SessionOptions {
  int64_t n_ctx = 4096;       // positions this session may reach
  int64_t micro_batch = 256;  // tokens per forward step during prefill
  KvType kv_type = KvType::kF16;
};

struct ModelInfo {
  std::string path;
  std::string architecture;
  std::string name;
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_layer = 0;
  int n_embd = 0;
};

class Engine {
 public:
  static StatusOr<std::unique_ptr<Engine>> Load(const std::string& path,
                                                const EngineOptions& options = {});
  ~Engine();

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelInfo& info() const { return info_; }
  // The chat template recognised from the file at load, or why there is none.
  StatusOr<ChatFormat> chat_format() const { return chat_format_; }
  int threads() const;

  // REQUIRES: options.n_ctx >= 1, micro_batch >= 1. n_ctx above the model's
  // training context is an error.
  StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options);

 private:
  friend class Session;
  Engine();
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  ModelInfo info_;
  StatusOr<ChatFormat> chat_format_ = UnimplementedError("no model loaded");
};

enum class LogitsFor { kNone, kLast, kAll };

// Called with the index of the token within the Eval call and its logits
// (n_vocab floats, valid only during the call).
using LogitsCallback = std::function<void(int64_t index, std::span<const float> logits)>;

class Session {
 public:
  ~Session();
  // Appends `tokens` at position() and runs them through the model in
  // micro-batches. Fails with OUT_OF_RANGE (and changes nothing) when the
  // tokens would pass n_ctx, INVALID_ARGUMENT for an id outside the vocabulary.
  Status Eval(std::span<const TokenId> tokens, LogitsFor which, const LogitsCallback& on_logits);
  int64_t position() const { return pos_; }
  int64_t n_ctx() const;
  // Bytes of KV cache this session holds in memory (allocated for n_ctx;
  // sliding-window layers hold only their window).
  uint64_t kv_bytes() const;
  // Forgets every position (the cache is reused).
  void Reset() { pos_ = 0; }

 private:
  friend class Engine;
  struct State;
  Session(Engine* engine, std::unique_ptr<State> state);
  Engine* engine_;
  std::unique_ptr<State> state_;
  int64_t pos_ = 0;
};

}  // namespace ellm
