// ellmd: the batch document-processing daemon.
//
// Lifecycle: Init (config, store, model) -> Ready (sd_notify READY=1) ->
// Draining (on SIGTERM/SIGINT) -> Stopped; components stop in reverse order.
// The Kafka job consumer and the pipelines attach at Ready as they land.
#include <getopt.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdio>
#include <string>

#include "config.h"
#include "ellm/engine/cpu_features.h"
#include "ellm/engine/gguf.h"
#include "ellm/store/database.h"

namespace {

constexpr const char* kUsage =
    "usage: ellmd [--config FILE] [--check]\n"
    "  --config FILE  configuration (default /etc/ellm/ellm.yaml)\n"
    "  --check        validate the configuration, model and store, then exit\n";

int Run(const std::string& config_path, bool check_only) {
  auto config = ellm::daemon::LoadConfig(config_path);
  if (!config.ok()) {
    spdlog::critical("{}", config.status().ToString());
    return 78;  // EX_CONFIG: systemd will not restart-loop on a bad file
  }
  spdlog::set_level(spdlog::level::from_str(config->log.level));
  spdlog::info("stage=Init config={} cpu=[{}]", config_path, ellm::HostCpu().ToString());

  auto model = ellm::gguf::GgufFile::Open(config->model.path);
  if (!model.ok()) {
    spdlog::critical(
        "model: {} (set model.path in the config to a GGUF file; in a source tree "
        "scripts/fetch-model fetches Gemma 3 270M)",
        model.status().ToString());
    return 1;
  }
  auto arch = model->GetString("general.architecture");
  spdlog::info("model {} arch={} tensors={}", config->model.path,
               arch.ok() ? std::string(*arch) : "?", model->tensors().size());

  auto db = ellm::store::Database::Open(config->store.path);
  if (!db.ok()) {
    spdlog::critical("store: {}", db.status().ToString());
    return 1;
  }
  spdlog::info("store {} schema v{}", config->store.path, ellm::store::Database::SchemaVersion());
  if (check_only) {
    spdlog::info("check passed");
    return 0;
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  spdlog::info("stage=Ready");
  sd_notify(0, "READY=1\nSTATUS=ready");
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("stage=Draining signal={}", sig);
  sd_notify(0, "STOPPING=1");
  db->reset();
  spdlog::info("stage=Stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = "/etc/ellm/ellm.yaml";
  bool check_only = false;
  static const option kOptions[] = {{"config", required_argument, nullptr, 'c'},
                                    {"check", no_argument, nullptr, 'k'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "c:kh", kOptions, nullptr)) != -1) {
    switch (opt) {
      case 'c':
        config_path = optarg;
        break;
      case 'k':
        check_only = true;
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      default:
        std::fputs(kUsage, stderr);
        return 2;
    }
  }
  return Run(config_path, check_only);
}
