#include "config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

namespace ellm::daemon {
namespace {

Status At(const std::string& src, const YAML::Node& n, const std::string& what) {
  std::string where = src;
  if (n.IsDefined() && n.Mark().line >= 0) where += ":" + std::to_string(n.Mark().line + 1);
  return InvalidArgumentError("config " + where + ": " + what);
}

Status CheckKeys(const std::string& src, const YAML::Node& map, const std::string& section,
                 const std::set<std::string>& allowed) {
  if (!map.IsMap()) return At(src, map, "'" + section + "' must be a mapping");
  for (const auto& kv : map) {
    std::string k = kv.first.as<std::string>();
    if (!allowed.count(k)) {
      return At(src, kv.first, "unknown key '" + (section.empty() ? k : section + "." + k) + "'");
    }
  }
  return OkStatus();
}

template <typename T>
Status Get(const std::string& src, const YAML::Node& map, const std::string& section,
           const char* key, T& out) {
  YAML::Node n = map[key];
  if (!n) return OkStatus();
  try {
    out = n.as<T>();
  } catch (const YAML::Exception&) {
    return At(src, n, "key '" + section + "." + key + "' has the wrong type");
  }
  return OkStatus();
}

}  // namespace

Status ModelConfig::Validate() const {
  if (path.empty()) return InvalidArgumentError("model.path is empty");
  if (threads < 0) return InvalidArgumentError("model.threads must be >= 0");
  return OkStatus();
}

Status StoreConfig::Validate() const {
  if (path.empty()) return InvalidArgumentError("store.path is empty");
  return OkStatus();
}

Status KafkaConfig::Validate() const {
  if (!enabled) return OkStatus();
  if (brokers.empty()) return InvalidArgumentError("kafka.brokers is empty");
  if (group_id.empty()) return InvalidArgumentError("kafka.group_id is empty");
  if (jobs_topic.empty() || results_topic.empty() || dead_letter_topic.empty()) {
    return InvalidArgumentError("kafka topics must not be empty");
  }
  if (jobs_topic == dead_letter_topic) {
    return InvalidArgumentError("kafka.dead_letter_topic must differ from kafka.jobs_topic");
  }
  return OkStatus();
}

Status LogConfig::Validate() const {
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error"};
  if (!kLevels.count(level)) {
    return InvalidArgumentError("log.level '" + level +
                                "': expected trace, debug, info, warn or error");
  }
  return OkStatus();
}

Status Config::Validate() const {
  ELLM_RETURN_IF_ERROR(model.Validate());
  ELLM_RETURN_IF_ERROR(store.Validate());
  ELLM_RETURN_IF_ERROR(kafka.Validate());
  ELLM_RETURN_IF_ERROR(log.Validate());
  return OkStatus();
}

StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& src) {
  Config c;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (root.IsNull()) return c;  // an empty file means all defaults
    ELLM_RETURN_IF_ERROR(CheckKeys(src, root, "", {"model", "store", "kafka", "log"}));
    if (YAML::Node n = root["model"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "model", {"path", "threads"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "path", c.model.path));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "threads", c.model.threads));
    }
    if (YAML::Node n = root["store"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "store", {"path"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "store", "path", c.store.path));
    }
    if (YAML::Node n = root["kafka"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(
          src, n, "kafka",
          {"enabled", "brokers", "group_id", "jobs_topic", "results_topic", "dead_letter_topic"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "enabled", c.kafka.enabled));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "brokers", c.kafka.brokers));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "group_id", c.kafka.group_id));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "jobs_topic", c.kafka.jobs_topic));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "results_topic", c.kafka.results_topic));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "dead_letter_topic", c.kafka.dead_letter_topic));
    }
    if (YAML::Node n = root["log"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "log", {"level"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "log", "level", c.log.level));
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("config " + src + ":" + std::to_string(e.mark.line + 1) + ": " +
                                e.msg);
  }
  Status st = c.Validate();
  if (!st.ok()) return st.WithContext("config " + src);
  return c;
}

StatusOr<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

}  // namespace ellm::daemon
