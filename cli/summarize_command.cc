// ellm summarize / ellm compare: run a pipeline on local files, no Kafka.
//   ellm summarize FILE... [--pipeline P] [--model PATH] [--db PATH] [--json]
//                  [--config FILE] [--pipelines DIR] [--ctx N] [--threads N]
//   ellm compare A B [...same options; --pipeline defaults to compare-contracts]
// The result is printed and stored as a job in SQLite (--db, else the
// config's store.path, else $XDG_DATA_HOME/ellm/ellm.db). On a terminal a
// progress line with ETA shows extraction, map steps, prefill and generation.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "config.h"
#include "ellm/ingest/extract.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/store/job_store.h"
#include "flags.h"

namespace ellm::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string DataDirStore() {
  std::string base;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    base = std::string(h) + "/.local/share";
  } else {
    base = ".";
  }
  return base + "/ellm/ellm.db";
}

// One progress line on stderr, redrawn in place.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { Clear(); }
  void Update(const pipelines::Progress& p) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (p.stage != stage_) {
      stage_ = p.stage;
      stage_start_ = now;
    }
    if (now - last_ < std::chrono::milliseconds(100) && p.done != p.total) return;
    last_ = now;
    double frac = p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0;
    constexpr int kWidth = 28;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    double elapsed = std::chrono::duration<double>(now - stage_start_).count();
    std::string eta = "";
    if (frac > 0.02 && frac < 1.0) {
      eta = " ETA " + std::to_string(static_cast<int>(elapsed * (1 - frac) / frac)) + "s";
    }
    std::fprintf(stderr, "\r\033[K%-10s [%s] %lld/%lld%s", p.stage.c_str(), bar.c_str(),
                 static_cast<long long>(p.done), static_cast<long long>(p.total), eta.c_str());
    std::fflush(stderr);
  }
  void Clear() {
    if (enabled_) std::fputs("\r\033[K", stderr);
  }

 private:
  bool enabled_;
  std::string stage_;
  Clock::time_point stage_start_{}, last_{};
};

Status Run(const Flags& f, const std::string& default_pipeline, int min_files) {
  const auto& files = f.positional();
  if (static_cast<int>(files.size()) < min_files) {
    return InvalidArgumentError("give at least " + std::to_string(min_files) + " file(s)");
  }
  daemon::Config config;
  std::string config_path = f.Get("config");
  if (config_path.empty() && access("/etc/ellm/ellm.yaml", R_OK) == 0) {
    config_path = "/etc/ellm/ellm.yaml";
  }
  if (!config_path.empty()) {
    ELLM_ASSIGN_OR_RETURN(config, daemon::LoadConfig(config_path));
  }
  std::string model = f.Get("model", config.model.path);
  if (access(model.c_str(), R_OK) != 0) {
    return NotFoundError("no model at '" + model +
                         "' (pass --model PATH; in a source tree scripts/fetch-model fetches "
                         "Gemma 3 270M)");
  }
  std::string db = f.Get("db", config_path.empty() ? DataDirStore() : config.store.path);
  std::string dir =
      f.Get("pipelines",
            config.pipelines.dir.empty() ? pipelines::DefaultPipelinesDir() : config.pipelines.dir);
  std::string pipeline = f.Get("pipeline", default_pipeline);
  ELLM_ASSIGN_OR_RETURN(int64_t ctx, f.GetInt("ctx", config.model.context));
  ELLM_ASSIGN_OR_RETURN(int64_t threads, f.GetInt("threads", config.model.threads));

  // Documents and the pipeline are checked before the model loads.
  ingest::JobMessage job;
  job.pipeline = pipeline;
  for (const std::string& file : files) {
    char buf[PATH_MAX];
    if (!realpath(file.c_str(), buf)) return ErrnoError(errno, "document '" + file + "'");
    ingest::JobDocument d;
    d.path = file;
    d.resolved_path = buf;
    job.documents.push_back(d);
  }
  ELLM_ASSIGN_OR_RETURN(auto specs, pipelines::LoadPipelineDirectory(dir));
  std::filesystem::create_directories(std::filesystem::path(db).parent_path());
  ELLM_ASSIGN_OR_RETURN(auto store, store::JobStore::Open(db));

  pipelines::GeneratorOptions go;
  go.engine.threads = static_cast<int>(threads);
  go.context = ctx;
  go.micro_batch = config.model.micro_batch;
  go.kv_type = config.model.kv_type == "f32" ? KvType::kF32 : KvType::kF16;
  ELLM_ASSIGN_OR_RETURN(auto generator, pipelines::Generator::Load(model, go));
  ingest::ExtractOptions extract;
  pipelines::ProcessorRegistry registry;
  ELLM_RETURN_IF_ERROR(pipelines::RegisterPipelines(specs, generator.get(), extract, &registry));
  pipelines::Processor* processor = registry.Find(pipeline);
  if (!processor) {
    std::string names;
    for (const auto& n : registry.Names()) names += (names.empty() ? "" : ", ") + n;
    return NotFoundError("no pipeline '" + pipeline + "' in " + dir + " (have: " + names + ")");
  }
  ProgressLine line(isatty(2) && !f.Has("json"));
  if (auto* pp = dynamic_cast<pipelines::PipelineProcessor*>(processor)) {
    pp->set_progress([&](const pipelines::Progress& p) { line.Update(p); });
  }

  job.id = "cli-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  store::NewJob nj{job.id,       pipeline,        job.params_json,
                   std::nullopt, {"cli", -1, -1}, "ellm/" + std::to_string(getpid())};
  ELLM_RETURN_IF_ERROR(store->Begin(nj).status());
  std::atomic<bool> cancel{false};
  auto t0 = Clock::now();
  pipelines::ProcessorResult r = processor->Run(job, cancel);
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  line.Clear();
  if (!r.output) {
    (void)store->Fail(nj, r.error_code, r.error);
    return Status(StatusCode::kFailedPrecondition, r.error_code + ": " + r.error);
  }
  ELLM_RETURN_IF_ERROR(store->Succeed(job.id, r.output->documents, r.output->result).status());
  const store::ResultRecord& res = r.output->result;
  if (f.Has("json")) {
    nlohmann::json out = {{"id", job.id},
                          {"pipeline", pipeline},
                          {"text", res.output_text},
                          {"strategy", res.strategy},
                          {"prompt_tokens", res.prompt_tokens},
                          {"generated_tokens", res.generated_tokens},
                          {"prefill_ms", res.prefill_ms},
                          {"decode_ms", res.decode_ms},
                          {"seconds", seconds},
                          {"store", db}};
    if (res.output_json) out["json"] = nlohmann::json::parse(*res.output_json);
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << res.output_text << "\n";
  }
  std::cout.flush();
  std::fprintf(stderr,
               "%s: %s; %lld prompt tokens (prefill %.1f s), %lld generated (%.1f s); %.1f s "
               "in all; stored as job %s in %s\n",
               pipeline.c_str(), res.strategy.c_str(), static_cast<long long>(res.prompt_tokens),
               static_cast<double>(res.prefill_ms) / 1000.0,
               static_cast<long long>(res.generated_tokens),
               static_cast<double>(res.decode_ms) / 1000.0, seconds, job.id.c_str(), db.c_str());
  return OkStatus();
}

int Main(const Args& args, const char* name, const std::string& default_pipeline, int min_files) {
  auto flags = Flags::Parse(
      args, {"pipeline", "model", "db", "config", "pipelines", "ctx", "threads"}, {"json"});
  if (!flags.ok()) {
    std::fprintf(stderr,
                 "ellm %s: %s\nusage: ellm %s FILE... [--pipeline P] [--model PATH] [--db PATH] "
                 "[--json] [--config FILE] [--pipelines DIR] [--ctx N] [--threads N]\n",
                 name, flags.status().message().c_str(), name);
    return 2;
  }
  Status s = Run(*flags, default_pipeline, min_files);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm %s: %s\n", name, s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace

int Summarize(const Args& args) { return Main(args, "summarize", "summarize-report", 1); }
int Compare(const Args& args) { return Main(args, "compare", "compare-contracts", 2); }

}  // namespace ellm::cli
