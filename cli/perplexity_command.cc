// ellm perplexity: the text's perplexity under the model (chunking as in
// ellm/engine/perplexity.h), printed as one JSON object
// {"tokens": scored, "nll": mean, "ppl": exp(nll)}; progress to stderr.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/perplexity.h"
#include "flags.h"
#include "kv_flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kUsage =
    "usage: ellm perplexity --model M --file F --ctx N [--threads N] [--batch N] [--chunks K]\n"
    "         [--kv-type bf16|f16|f32|q8_0] [--attn-weights f32|bf16]\n"
    "         [--attn-scores auto|pairs|f32|tiles] [--kv-budget MIB]\n"
    "         [--spill-dir DIR] [--spill-level L] [--spill-read copy|map]\n"
    "         [--sparse-attn K [--sparse-sink N] [--sparse-local N]]\n";

Status Run(const Flags& f) {
  const std::string model_path = f.Get("model"), file = f.Get("file");
  if (model_path.empty() || file.empty() || !f.Has("ctx")) {
    return InvalidArgumentError("--model, --file and --ctx are required");
  }
  PerplexityOptions o;
  ELLM_ASSIGN_OR_RETURN(o.ctx, f.GetInt("ctx", 512));
  ELLM_ASSIGN_OR_RETURN(o.micro_batch, f.GetInt("batch", 512));
  ELLM_ASSIGN_OR_RETURN(o.max_chunks, f.GetInt("chunks", 0));
  ELLM_ASSIGN_OR_RETURN(int64_t threads, f.GetInt("threads", 0));
  ELLM_RETURN_IF_ERROR(ApplyKvFlags(f, &o.session));
  ELLM_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  ELLM_ASSIGN_OR_RETURN(auto engine,
                        Engine::Load(model_path, {.threads = static_cast<int>(threads)}));
  const auto start = std::chrono::steady_clock::now();
  o.progress = [&](int64_t done, int64_t total, double nll) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "chunk %lld/%lld: ppl so far %.4f (%.1f tokens/s)\n",
                 static_cast<long long>(done), static_cast<long long>(total), std::exp(nll),
                 static_cast<double>(done * o.ctx) / secs);
  };
  ELLM_ASSIGN_OR_RETURN(PerplexityResult r, ComputePerplexity(*engine, text, o));
  nlohmann::json out = {{"tokens", r.tokens}, {"nll", r.nll},
                        {"ppl", r.ppl},       {"ctx", r.ctx},
                        {"chunks", r.chunks}, {"kv_type", KvTypeName(o.session.kv_type)}};
  AddAttentionSettings(o.session, &out);
  AddKvStats(r.kv, &out);
  std::printf("%s\n", out.dump().c_str());
  return OkStatus();
}

}  // namespace

int Perplexity(const Args& args) {
  std::set<std::string> names = {"model", "file", "ctx", "threads", "batch", "chunks"};
  for (const std::string& n : KvFlagNames()) names.insert(n);
  auto flags = Flags::Parse(args, names, {});
  if (!flags.ok()) {
    std::fprintf(stderr, "ellm perplexity: %s\n%s", flags.status().message().c_str(), kUsage);
    return 2;
  }
  Status s = Run(*flags);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm perplexity: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ellm::cli
