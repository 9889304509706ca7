// ellm submit: put a job message (version 1) on the jobs topic, for people
// who feed the daemon by hand.
//   ellm submit FILE... [--pipeline P] [--id ID] [--params JSON] [--inline]
//               [--reply-to TOPIC] [--config FILE] [--brokers B] [--topic T]
// Files are sent as absolute paths (they must lie under the daemon's
// jobs.allowed_roots), or with --inline as base64 bytes. Prints the job id.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ellm/app/config.h"
#include "ellm/base/json.h"
#include "ellm/ingest/job_message.h"
#include "ellm/ingest/kafka.h"
#include "flags.h"

namespace ellm::cli {
namespace {

Status Run(const Flags& f) {
  if (f.positional().empty()) return InvalidArgumentError("give at least one file");
  app::Config config;
  std::string config_path = f.Get("config");
  if (config_path.empty() && access("/etc/ellm/ellm.yaml", R_OK) == 0) {
    config_path = "/etc/ellm/ellm.yaml";
  }
  if (!config_path.empty()) {
    ELLM_ASSIGN_OR_RETURN(config, app::LoadConfig(config_path));
  }
  nlohmann::json docs = nlohmann::json::array();
  for (const std::string& file : f.positional()) {
    if (f.Has("inline")) {
      ELLM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(file));
      docs.push_back({{"name", std::filesystem::path(file).filename().string()},
                      {"content_base64", ingest::EncodeBase64(bytes)}});
    } else {
      char buf[PATH_MAX];
      if (!realpath(file.c_str(), buf)) return ErrnoError(errno, "document '" + file + "'");
      docs.push_back({{"path", std::string(buf)}});
    }
  }
  std::string id =
      f.Get("id", "submit-" +
                      std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  nlohmann::json job = {{"version", 1},
                        {"id", id},
                        {"pipeline", f.Get("pipeline", "summarize-report")},
                        {"documents", docs}};
  if (f.Has("params")) {
    StatusOr<nlohmann::json> params = ParseJson(f.Get("params"));
    if (!params.ok()) return params.status().WithContext("--params");
    if (!params->is_object()) return InvalidArgumentError("--params must be a JSON object");
    job["params"] = std::move(*params);
  }
  if (f.Has("reply-to")) job["reply_to"] = f.Get("reply-to");
  ingest::KafkaOptions kafka;
  kafka.brokers = f.Get("brokers", config.kafka.brokers);
  kafka.properties = config.kafka.properties;
  ELLM_ASSIGN_OR_RETURN(auto producer, ingest::KafkaProducer::Create(kafka));
  std::string topic = f.Get("topic", config.kafka.jobs_topic);
  ELLM_RETURN_IF_ERROR(producer->Produce(topic, id, job.dump()));
  std::printf("%s\n", id.c_str());
  std::fprintf(stderr, "submitted job %s (%s, %zu document(s)) to %s on %s\n", id.c_str(),
               job["pipeline"].get<std::string>().c_str(), docs.size(), topic.c_str(),
               kafka.brokers.c_str());
  return OkStatus();
}

}  // namespace

int Submit(const Args& args) {
  auto flags = Flags::Parse(
      args, {"pipeline", "id", "params", "reply-to", "config", "brokers", "topic"}, {"inline"});
  if (!flags.ok()) {
    std::fprintf(stderr,
                 "ellm submit: %s\nusage: ellm submit FILE... [--pipeline P] [--id ID] "
                 "[--params JSON] [--inline] [--reply-to TOPIC] [--config FILE] [--brokers B] "
                 "[--topic T]\n",
                 flags.status().message().c_str());
    return 2;
  }
  Status s = Run(*flags);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm submit: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ellm::cli
