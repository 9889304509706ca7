// ellm bench: prefill `depth` tokens, then generate `gen` tokens greedily,
// and print one JSON object with the speeds and the peak RSS. The prompt is
// a fixed pseudo-random token sequence (speed does not depend on content).
// --streams N: N sessions, each prefilled with its own prompt, then decoded
// together (batched decode, Session::EvalBatch), as N concurrent API
// streams are; the speeds are the aggregate over the streams.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "ellm/engine/cpu_features.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/sampler.h"
#include "flags.h"
#include "kv_flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kUsage =
    "usage: ellm bench --model M --depth D --gen N [--threads T] [--batch B] [--streams N]\n"
    "         [--json]\n"
    "         [--kv-type bf16|f16|f32|q8_0] [--attn-weights f32|bf16]\n"
    "         [--attn-scores auto|pairs|f32|tiles] [--kv-budget MIB]\n"
    "         [--spill-dir DIR] [--spill-level L] [--spill-read copy|map]\n"
    "         [--sparse-attn K [--sparse-sink N] [--sparse-local N]]\n";

// This process's own peak: VmHWM belongs to the address space exec made.
// getrusage's ru_maxrss is kept across execve, so a parent that forked us
// while holding a large heap (a Python script that had just run llama.cpp)
// would be counted as ours; it is only the fallback.
uint64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // kB
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

Status Run(const Flags& f) {
  const std::string model_path = f.Get("model");
  if (model_path.empty()) return InvalidArgumentError("--model is required");
  ELLM_ASSIGN_OR_RETURN(int64_t depth, f.GetInt("depth", 512));
  ELLM_ASSIGN_OR_RETURN(int64_t gen, f.GetInt("gen", 32));
  ELLM_ASSIGN_OR_RETURN(int64_t threads, f.GetInt("threads", 0));
  ELLM_ASSIGN_OR_RETURN(int64_t batch, f.GetInt("batch", 256));
  ELLM_ASSIGN_OR_RETURN(int64_t streams, f.GetInt("streams", 1));
  if (streams < 1 || streams > 256) return InvalidArgumentError("--streams must be 1..256");
  if (depth < 1 || gen < 0) return InvalidArgumentError("--depth must be >= 1 and --gen >= 0");
  const int64_t n_ctx = depth + gen + 1;
  SessionOptions so{.n_ctx = n_ctx, .micro_batch = batch};
  ELLM_RETURN_IF_ERROR(ApplyKvFlags(f, &so));  // before the model: bad flags fail at once
  ELLM_ASSIGN_OR_RETURN(auto engine,
                        Engine::Load(model_path, {.threads = static_cast<int>(threads)}));
  std::vector<std::unique_ptr<Session>> sessions;
  for (int64_t i = 0; i < streams; ++i) {
    ELLM_ASSIGN_OR_RETURN(auto session, engine->NewSession(so));
    sessions.push_back(std::move(session));
  }
  std::uniform_int_distribution<TokenId> pick(1000, std::min(engine->info().n_vocab - 1, 200000));
  std::vector<TokenId> next(static_cast<size_t>(streams), 0);
  double prefill_s = 0;
  for (int64_t i = 0; i < streams; ++i) {
    std::mt19937 rng(1234 + static_cast<unsigned>(i));  // stream 0: the single-stream prompt
    std::vector<TokenId> prompt(static_cast<size_t>(depth));
    prompt[0] = engine->tokenizer().bos();
    for (size_t k = 1; k < prompt.size(); ++k) prompt[k] = pick(rng);
    auto t0 = std::chrono::steady_clock::now();
    ELLM_RETURN_IF_ERROR(sessions[i]->Eval(
        prompt, LogitsFor::kLast, [&](int64_t, std::span<const float> l) { next[i] = ArgMax(l); }));
    prefill_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::vector<Session*> all;
  for (auto& s : sessions) all.push_back(s.get());
  auto t1 = std::chrono::steady_clock::now();
  for (int64_t g = 0; g < gen; ++g) {
    const std::vector<TokenId> cur = next;
    auto greedy = [&](int64_t i, std::span<const float> l) { next[i] = ArgMax(l); };
    if (streams == 1) {
      ELLM_RETURN_IF_ERROR(
          sessions[0]->Eval(std::span<const TokenId>(cur.data(), 1), LogitsFor::kLast, greedy));
    } else {
      ELLM_RETURN_IF_ERROR(Session::EvalBatch(all, cur, greedy));
    }
  }
  auto t2 = std::chrono::steady_clock::now();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  const double decoded = static_cast<double>(gen * streams);
  nlohmann::json out = {
      {"model", model_path},
      {"depth", depth},
      {"gen", gen},
      {"threads", engine->threads()},
      {"micro_batch", batch},
      {"streams", streams},
      {"prefill_tokens_per_s", static_cast<double>(depth * streams) / prefill_s},
      {"decode_tokens_per_s", gen > 0 ? decoded / decode_s : 0.0},
      {"prefill_seconds", prefill_s},
      {"decode_seconds", decode_s},
      {"peak_rss_bytes", PeakRssBytes()},
      {"kv_type", KvTypeName(so.kv_type)},
      // The kernels' level (ELLM_ISA caps it): "avx2", "avx512vnni", ...
      {"isa", IsaLevelName(HostCpu().Level())},
  };
  // Which path each weight matrix took: a row-wise fallback is no longer
  // silent (issue 35).
  nlohmann::json weights = nlohmann::json::array();
  int64_t row_wise = 0;
  for (const WeightPath& p : engine->WeightPaths()) {
    weights.push_back(
        {{"tensor", p.tensor}, {"type", p.type}, {"path", p.packed ? "packed" : "row-wise"}});
    row_wise += p.packed ? 0 : 1;
  }
  out["weights_row_wise"] = row_wise;
  out["weights"] = std::move(weights);
  AddAttentionSettings(so, &out);
  AddKvStats(sessions[0]->kv_stats(), &out);
  std::printf("%s\n", f.Has("json") ? out.dump().c_str() : out.dump(2).c_str());
  return OkStatus();
}

}  // namespace

int Bench(const Args& args) {
  std::set<std::string> names = {"model", "depth", "gen", "threads", "batch", "streams"};
  for (const std::string& n : KvFlagNames()) names.insert(n);
  auto flags = Flags::Parse(args, names, {"json"});
  if (!flags.ok()) {
    std::fprintf(stderr, "ellm bench: %s\n%s", flags.status().message().c_str(), kUsage);
    return 2;
  }
  Status s = Run(*flags);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm bench: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ellm::cli
