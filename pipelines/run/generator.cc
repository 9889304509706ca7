#include "ellm/pipelines/generator.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include <filesystem>

#include <algorithm>
#include <chrono>

#include "ellm/engine/chat.h"
#include "ellm/engine/reply.h"

namespace ellm::pipelines {
namespace {

using Clock = std::chrono::steady_clock;

// Prefill slice: small enough that progress and cancellation are prompt,
// large enough that the engine's micro-batches stay full.
constexpr int64_t kPrefillSlice = 1024;

// Small models fall into loops that repeat a line verbatim. When the last
// complete line of `text` repeats an earlier one, returns where it starts
// (the cut point); npos otherwise.
size_t RepeatedLine(const std::string& text) {
  if (text.empty() || text.back() != '\n') return std::string::npos;
  size_t end = text.size() - 1;
  size_t start = text.rfind('\n', end - (end > 0 ? 1 : 0));
  start = start == std::string::npos ? 0 : start + 1;
  if (start >= end) return std::string::npos;
  std::string_view last(text.data() + start, end - start);
  size_t pos = 0;
  while (pos < start) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos || nl > start) break;
    if (std::string_view(text.data() + pos, nl - pos) == last) return start;
    pos = nl + 1;
  }
  return std::string::npos;
}

// The prefix cache directory, made (with its parents) when missing: the
// directory itself mode 0700 whatever the umask, since the states in it
// encode documents. An existing directory keeps its mode (an administrator's
// choice, or the package's tmpfiles.d entry). False when it cannot be made.
bool MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return true;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (::mkdir(dir.c_str(), 0700) == 0) return ::chmod(dir.c_str(), 0700) == 0;
  return errno == EEXIST && std::filesystem::is_directory(dir, ec);
}

}  // namespace

StatusOr<std::unique_ptr<Generator>> Generator::Load(const std::string& model_path,
                                                     const GeneratorOptions& options) {
  auto g = std::unique_ptr<Generator>(new Generator());
  g->options_ = options;
  ELLM_ASSIGN_OR_RETURN(g->engine_, Engine::Load(model_path, options.engine));
  const ModelInfo& info = g->engine_->info();
  g->context_ = std::min<int64_t>(options.session.n_ctx, info.n_ctx_train);
  if (g->context_ < 256) {
    return InvalidArgumentError("context " + std::to_string(options.session.n_ctx) +
                                " is too small for a pipeline (at least 256 tokens)");
  }
  SessionOptions session = options.session;
  session.n_ctx = g->context_;
  ELLM_ASSIGN_OR_RETURN(g->session_, g->engine_->NewSession(session));
  struct stat st {};
  stat(model_path.c_str(), &st);
  std::string file = model_path.substr(model_path.find_last_of('/') + 1);
  g->fingerprint_ = file + ":" + info.name + ":" + std::to_string(st.st_size);
  return g;
}

std::string Generator::PrefixPath(std::span<const TokenId> prefix) const {
  // FNV-1a over the model, the KV type and the tokens; a collision only
  // costs a miss, since restoring checks the exact tokens.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  };
  mix(info().fingerprint.data(), info().fingerprint.size());
  // (and the attention weights' precision, a bf16 cache's f32 scores and
  // sparse attention, which the later layers' K/V depend on; exact
  // attention with pair scores hashes as it always did)
  const SessionOptions& so = options_.session;
  const bool f32_scores =
      so.kv_type == KvType::kBF16 && AttnScoresUsed(so.kv_type, so.attn_scores) == AttnScores::kF32;
  const bool tile_scores = so.kv_type == KvType::kBF16 &&
                           AttnScoresUsed(so.kv_type, so.attn_scores) == AttnScores::kTiles;
  const int type = static_cast<int>(so.kv_type) | (so.bf16_attention_weights ? 256 : 0) |
                   (f32_scores ? 512 : 0) | (tile_scores ? 1024 : 0);
  mix(&type, sizeof(type));
  const SparseAttentionOptions& sp = so.sparse_attention;
  if (sp.top_k_blocks > 0) {
    const int sparse[3] = {sp.top_k_blocks, sp.sink_tokens, sp.local_tokens};
    mix(sparse, sizeof(sparse));
  }
  mix(prefix.data(), prefix.size_bytes());
  char name[40];
  std::snprintf(name, sizeof(name), "%016llx-%zu.kvs", static_cast<unsigned long long>(h),
                prefix.size());
  return options_.prefix_cache_dir + "/" + name;
}

StatusOr<int64_t> Generator::PrefixFromCache(std::span<const TokenId> ids, int64_t n_prefix,
                                             bool cache, const ProgressFn& progress) {
  if (n_prefix <= 0 || n_prefix >= static_cast<int64_t>(ids.size())) return 0;
  const auto prefix = ids.first(static_cast<size_t>(n_prefix));
  const int64_t total = static_cast<int64_t>(ids.size());
  // Positions of the whole prompt, as the rest's prefill reports them.
  ProgressCallback report = nullptr;
  if (progress) {
    report = [&](int64_t done, int64_t) {
      progress({"prefill", done, total});
      return true;
    };
  }
  auto prefill = [&]() -> Status {
    session_->Reset();
    return session_->Eval(prefix, LogitsFor::kNone, nullptr, report);
  };
  if (options_.prefix_cache_dir.empty() || !cache) {
    // The same split as with a cache, so answers do not depend on cache hits.
    ELLM_RETURN_IF_ERROR(prefill());
    return 0;
  }
  const std::string path = PrefixPath(prefix);
  auto restored = session_->RestoreState(path, ids);
  if (restored.ok() && *restored == n_prefix) {
    std::error_code ec;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
    return n_prefix;
  }
  ELLM_RETURN_IF_ERROR(prefill());
  // A cache that cannot be written (disk full, permissions) costs only the reuse.
  if (MakePrivateDir(options_.prefix_cache_dir) && session_->SaveState(path).ok()) {
    TrimPrefixCache();
  }
  return 0;
}

// Removes the least recently used states until the cache fits its bound.
void Generator::TrimPrefixCache() const {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(options_.prefix_cache_dir, ec)) {
    if (e.path().extension() != ".kvs") continue;
    total += e.file_size(ec);
    files.emplace_back(e.last_write_time(ec), e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [when, path] : files) {
    if (total <= options_.prefix_cache_bytes) break;
    const uint64_t size = fs::file_size(path, ec);
    if (fs::remove(path, ec)) total -= size;
  }
}

int64_t Generator::CountTokens(const std::string& text) const {
  return static_cast<int64_t>(engine_->tokenizer().Encode(text, false, false).size());
}

StatusOr<Generation> Generator::Generate(const std::string& system, const std::string& prompt,
                                         PromptFormat format, const GenerationSettings& settings,
                                         const std::atomic<bool>& cancel,
                                         const ProgressFn& progress) {
  return GenerateSections(system, prompt, format, settings, {{"", settings.max_tokens}}, cancel,
                          progress);
}

StatusOr<Generator::PromptTokens> Generator::Encode(const std::string& system,
                                                    const std::string& prompt, PromptFormat format,
                                                    SharedPrefix shared_prefix) const {
  const Tokenizer& tok = engine_->tokenizer();
  PromptTokens out;
  out.text = prompt;
  out.chat = format == PromptFormat::kChat;
  if (out.chat) {
    ELLM_RETURN_IF_ERROR(engine_->chat_template().status());
    std::vector<ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", prompt});
    ELLM_ASSIGN_OR_RETURN(out.text, engine_->chat_template()->Apply(messages, true));
  } else if (!system.empty()) {
    out.text = system + "\n\n" + prompt;
  }
  const std::string& text = out.text;
  const size_t prompt_at = shared_prefix.chars > 0 ? text.find(prompt) : std::string::npos;
  if (prompt_at != std::string::npos && shared_prefix.chars < prompt.size()) {
    const size_t cut = prompt_at + shared_prefix.chars;
    out.ids = tok.Encode(text.substr(0, cut), true, out.chat);
    out.n_prefix = static_cast<int64_t>(out.ids.size());
    std::vector<TokenId> rest = tok.Encode(text.substr(cut), false, out.chat);
    out.ids.insert(out.ids.end(), rest.begin(), rest.end());
  } else {
    out.ids = tok.Encode(text, true, out.chat);
  }
  return out;
}

StatusOr<Generation> Generator::GenerateSections(
    const std::string& system, const std::string& prompt, PromptFormat format,
    const GenerationSettings& settings, const std::vector<Section>& sections,
    const std::atomic<bool>& cancel, const ProgressFn& progress, SharedPrefix shared_prefix) {
  const auto call_start = Clock::now();
  const Tokenizer& tok = engine_->tokenizer();
  ELLM_ASSIGN_OR_RETURN(PromptTokens pt, Encode(system, prompt, format, shared_prefix));
  const std::string& text = pt.text;
  const bool chat = pt.chat;
  std::vector<TokenId>& ids = pt.ids;
  const int64_t n_prefix = pt.n_prefix;
  int64_t budget = 0;
  for (const Section& s : sections) budget += s.max_tokens + CountTokens(s.lead);
  Generation out;
  out.prompt_tokens = static_cast<int64_t>(ids.size());
  if (out.prompt_tokens + budget > context_) {
    return OutOfRangeError("the prompt has " + std::to_string(out.prompt_tokens) +
                           " tokens; with room for " + std::to_string(budget) +
                           " answer tokens it does not fit the context of " +
                           std::to_string(context_));
  }
  // Grammar-constrained decoding (settings.json_schema): each pick masks
  // the tokens that would break the document, and accepts the one sampled.
  JsonConstraint* constraint = nullptr;
  if (!settings.json_schema.empty()) {
    for (const Section& s : sections) {
      if (!s.lead.empty()) {
        return InvalidArgumentError("a json_schema generation writes the whole answer: no leads");
      }
    }
    if (!constraint_ || constraint_schema_ != settings.json_schema) {
      ELLM_ASSIGN_OR_RETURN(constraint_, JsonConstraint::FromSchema(settings.json_schema, tok));
      constraint_schema_ = settings.json_schema;
    }
    constraint = constraint_.get();
  }
  // The engine may be shared (the HTTP API): this generation is batch work,
  // stepping aside between prefill slices and tokens for interactive
  // requests. GenerateReply (engine/reply.h) is the one decoding loop: it
  // feeds what the session lacks of each prompt, samples, and stops.
  EngineGate::Turn turn = engine_->gate().Batch();
  int64_t total_max = 0;
  for (const Section& s : sections) total_max += s.max_tokens;
  ReplyOptions ro;
  ro.sampling.temperature = static_cast<float>(settings.temperature);
  ro.sampling.top_k = settings.top_k;
  ro.sampling.top_p = static_cast<float>(settings.top_p);
  ro.sampling.repeat_penalty = static_cast<float>(settings.repeat_penalty);
  ro.constraint = constraint;
  ro.prefill_slice = kPrefillSlice;
  bool report_prefill = true;  // the prompt's prefill is reported, the leads' are not
  const ReplyProgressFn on_prefill = [&](int64_t done, int64_t total) {
    if (cancel.load()) return false;
    turn.Yield();  // an interactive request waiting goes first
    if (progress && report_prefill) progress({"prefill", done, total});
    return true;
  };
  int64_t generated_before = 0;  // tokens of the sections before this one
  ro.on_step = [&](int64_t generated) {
    if (cancel.load()) return false;
    turn.Yield();
    const int64_t all = generated_before + generated;
    if (progress && all % 8 == 0) progress({"generate", all, total_max});
    return true;
  };
  if (settings.stop_on_repeated_line && constraint == nullptr) {
    ro.stop_check = [](std::string_view t) { return RepeatedLine(std::string(t)); };
  }
  // One GenerateReply: adds its times and tokens to `out`; false when cancelled.
  auto reply = [&](std::span<const TokenId> tokens, const Section* sec) -> StatusOr<bool> {
    ro.max_tokens = sec == nullptr ? 0 : sec->max_tokens;
    ro.stop.clear();
    if (sec != nullptr && constraint == nullptr)
      ro.stop = sec->stop.empty() ? settings.stop : sec->stop;
    ELLM_ASSIGN_OR_RETURN(Reply r, GenerateReply(*session_, tok, tokens, ro, nullptr, on_prefill));
    out.prefill_ms += static_cast<int64_t>(r.prefill_seconds * 1000.0 + 0.5);
    out.decode_ms += static_cast<int64_t>(r.decode_seconds * 1000.0 + 0.5);
    out.constraint_ms += static_cast<int64_t>(r.constraint_seconds * 1000.0 + 0.5);
    out.generated_tokens += r.completion_tokens;
    generated_before += r.completion_tokens;
    if (r.finish == FinishReason::kCancelled) return false;
    if (sec == nullptr) return true;
    std::string generated = std::move(r.text);
    if (r.finish == FinishReason::kLength && r.completion_tokens == sec->max_tokens &&
        !constraint) {
      // Cut off mid-line by max_tokens: keep whole lines only.
      const size_t nl = generated.rfind('\n');
      if (nl != std::string::npos) generated.resize(nl);
    }
    while (!generated.empty() && (generated.back() == '\n' || generated.back() == ' ')) {
      generated.pop_back();
    }
    out.text += generated;
    out.sections.push_back(std::move(generated));
    return true;
  };

  session_->Reset();
  std::vector<std::vector<TokenId>> lead_ids;  // for the prompt log
  const auto prefix_t0 = Clock::now();
  ELLM_ASSIGN_OR_RETURN(out.reused_prefix_tokens,
                        PrefixFromCache(ids, n_prefix, shared_prefix.cache, progress));
  out.prefill_ms +=
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - prefix_t0).count();
  const int64_t prompt_end = static_cast<int64_t>(ids.size());
  std::vector<TokenId> history;  // what each section's reply is asked to continue
  for (size_t si = 0; si < sections.size(); ++si) {
    const Section& sec = sections[si];
    std::vector<TokenId> lead;
    if (!sec.lead.empty()) lead = tok.Encode(sec.lead, false, false);
    if (si == 0 || sec.from_prompt) {
      history.assign(ids.begin(), ids.begin() + prompt_end);
      // The prompt alone first, so that a lead is evaluated on its own as
      // each later section's is.
      if (si == 0 && !lead.empty()) {
        ELLM_ASSIGN_OR_RETURN(bool ok, reply(history, nullptr));
        if (!ok) {
          out.cancelled = true;
          return out;
        }
      }
    } else {
      const std::span<const TokenId> held = session_->tokens();
      history.assign(held.begin(), held.end());
    }
    report_prefill = si == 0;
    history.insert(history.end(), lead.begin(), lead.end());
    if (prompt_log_) {
      lead_ids.resize(si + 1);
      lead_ids[si] = lead;
    }
    out.text += sec.lead;
    ELLM_ASSIGN_OR_RETURN(bool ok, reply(history, &sec));
    if (!ok) {
      out.cancelled = true;
      return out;
    }
    // The next lead continues the sequence as evaluated: the token that
    // completed a stop string was sampled but not fed, so at most the start
    // of a stop string (e.g. one "\n" of "\n\n") precedes the lead.
  }
  if (constraint != nullptr && !constraint->Complete()) {
    // OutOfRange, not ResourceExhausted: the pipeline's own limit, reached
    // again on every retry (a permanent failure, see IsTransient).
    return OutOfRangeError("the JSON answer was not complete after " +
                           std::to_string(out.generated_tokens) +
                           " tokens (generation.max_tokens)");
  }
  if (progress) progress({"generate", out.generated_tokens, out.generated_tokens});
  if (prompt_log_) {
    lead_ids.resize(sections.size());
    prompt_log_({.text = text,
                 .chat = chat,
                 .ids = std::move(ids),
                 .sections = sections,
                 .lead_ids = std::move(lead_ids),
                 .settings = settings,
                 .result = out,
                 .seconds = std::chrono::duration<double>(Clock::now() - call_start).count()});
  }
  return out;
}

}  // namespace ellm::pipelines
