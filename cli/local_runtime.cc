#include "local_runtime.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "chat_template_flag.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "kv_flags.h"

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

}  // namespace

StatusOr<std::unique_ptr<app::Runtime>> OpenLocalRuntime(
    const Flags& f, const std::vector<std::string>& pipelines) {
  app::Config config;
  std::string config_path = f.Get("config");
  if (config_path.empty() && access("/etc/ellm/ellm.yaml", R_OK) == 0) {
    config_path = "/etc/ellm/ellm.yaml";
  }
  if (!config_path.empty()) {
    ELLM_ASSIGN_OR_RETURN(config, app::LoadConfig(config_path));
  }
  // Before anything is opened or created: a wrong name costs nothing.
  ELLM_ASSIGN_OR_RETURN(config.model.engine.chat_template,
                        ChatTemplateFromFlags(f, config.model.engine.chat_template));
  ELLM_RETURN_IF_ERROR(ApplyKvFlags(f, &config.model.session));
  app::RuntimeOverrides overrides;
  overrides.without_model =
      !pipelines.empty() &&
      std::none_of(pipelines.begin(), pipelines.end(),
                   [](const std::string& p) { return pipelines::PipelineNeedsModel(p); });
  overrides.model_path = f.Get("model", config.model.path);
  if (!overrides.without_model && access(overrides.model_path.c_str(), R_OK) != 0) {
    return NotFoundError("no model at '" + overrides.model_path +
                         "' (pass --model PATH; in a source tree scripts/fetch-model fetches "
                         "Gemma 3 270M)");
  }
  overrides.store_path = f.Get("db", config_path.empty() ? DataDirStore() : config.store.path);
  overrides.pipelines_dir = f.Get("pipelines");
  ELLM_ASSIGN_OR_RETURN(overrides.context, f.GetInt("ctx", config.model.session.n_ctx));
  ELLM_ASSIGN_OR_RETURN(overrides.threads, f.GetInt("threads", config.model.engine.threads));
  const std::filesystem::path store_dir = std::filesystem::path(overrides.store_path).parent_path();
  if (config_path.empty()) {
    // Without a config, keep the prefix cache beside the store, not in /var/lib.
    overrides.prefix_cache_dir = (store_dir / "prefix-cache").string();
  }
  std::error_code ec;  // a directory that cannot be made fails the store's open, saying so
  std::filesystem::create_directories(store_dir, ec);
  return app::OpenRuntime(config, overrides);
}

StatusOr<std::vector<ingest::JobDocument>> LocalDocuments(const std::vector<std::string>& files) {
  std::vector<ingest::JobDocument> out;
  for (const std::string& file : files) {
    char buf[PATH_MAX];
    if (!realpath(file.c_str(), buf)) return ErrnoError(errno, "document '" + file + "'");
    ingest::JobDocument d;
    d.path = file;
    d.resolved_path = buf;
    out.push_back(d);
  }
  return out;
}

void ProgressLine::Update(const pipelines::Progress& p) {
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

void ProgressLine::Clear() {
  if (enabled_) std::fputs("\r\033[K", stderr);
}

}  // namespace ellm::cli
