#include "ellm/app/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "ellm/engine/chat.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/numa.h"

namespace ellm::app {
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

// A key whose text the engine parses into its own type ("model.kv_type
// 'q4': ..." on a name it does not know).
template <typename T, typename Parse>
Status GetEnum(const std::string& src, const YAML::Node& map, const std::string& section,
               const char* key, Parse parse, T& out) {
  std::string text;
  ELLM_RETURN_IF_ERROR(Get(src, map, section, key, text));
  if (!map[key]) return OkStatus();
  auto v = parse(text);
  if (!v.ok()) return At(src, map[key], section + "." + key + ": " + v.status().message());
  out = *v;
  return OkStatus();
}

// model.attn_weights: the precision of attention's weights in the product
// with V (SessionOptions::bf16_attention_weights).
StatusOr<bool> ParseAttnWeights(std::string_view name) {
  if (name == "f32") return false;
  if (name == "bf16") return true;
  return InvalidArgumentError("'" + std::string(name) + "': expected f32 or bf16");
}

// A Validate() error with the line of the key it is about: the first
// "section.key" of `error`'s message ("kafka.session_timeout_ms < 1000")
// that the file sets. Without one (a check of several settings, a key left
// at its default), the error as it is.
Status WithLine(const std::string& src, const YAML::Node& root, const Status& error) {
  const std::string& m = error.message();
  if (root.IsMap()) {
    auto key_char = [](char c) { return std::islower(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t dot = m.find('.'); dot != std::string::npos; dot = m.find('.', dot + 1)) {
      size_t b = dot, e = dot + 1;
      while (b > 0 && key_char(m[b - 1])) --b;
      while (e < m.size() && key_char(m[e])) ++e;
      if (b == dot || e == dot + 1 || (b > 0 && m[b - 1] == '.')) continue;
      const YAML::Node section = root[m.substr(b, dot - b)];
      if (!section.IsMap()) continue;
      const YAML::Node key = section[m.substr(dot + 1, e - dot - 1)];
      if (key.IsDefined() && key.Mark().line >= 0) {
        return error.WithContext("config " + src + ":" + std::to_string(key.Mark().line + 1));
      }
    }
  }
  return error.WithContext("config " + src);
}

}  // namespace

Status ModelConfig::Validate() const {
  if (path.empty()) return InvalidArgumentError("model.path is empty");
  if (engine.threads < 0) return InvalidArgumentError("model.threads must be >= 0");
  if (session.n_ctx < 256) return InvalidArgumentError("model.context must be >= 256");
  if (Status s = ValidateChatTemplateSpec(engine.chat_template); !s.ok()) {
    return s.WithContext("model.chat_template");
  }
  return session.Validate().WithContext("model and kv settings");
}

Status KvConfig::Validate() const {
  if (prefix_cache_mib < 0) return InvalidArgumentError("kv.prefix_cache_mib must be >= 0");
  return OkStatus();
}

Status StoreConfig::Validate() const {
  if (path.empty()) return InvalidArgumentError("store.path is empty");
  if (retention_days < 0) return InvalidArgumentError("store.retention_days must be >= 0");
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
  if (session_timeout_ms < 1000) return InvalidArgumentError("kafka.session_timeout_ms < 1000");
  if (max_poll_interval_ms < session_timeout_ms) {
    return InvalidArgumentError("kafka.max_poll_interval_ms must be >= kafka.session_timeout_ms");
  }
  if (shutdown_grace_s < 0) return InvalidArgumentError("kafka.shutdown_grace_s must be >= 0");
  for (const char* owned : {"bootstrap.servers", "group.id", "group.instance.id",
                            "enable.auto.commit", "enable.auto.offset.store", "transactional.id"}) {
    if (properties.count(owned)) {
      return InvalidArgumentError(std::string("kafka.properties may not set '") + owned +
                                  "' (ellm manages it; use the kafka.* keys)");
    }
  }
  return OkStatus();
}

Status JobsConfig::Validate() const {
  for (const std::string& root : allowed_roots) {
    if (root.empty() || root[0] != '/') {
      return InvalidArgumentError("jobs.allowed_roots: '" + root + "' is not an absolute path");
    }
  }
  if (max_inline_bytes < 0) return InvalidArgumentError("jobs.max_inline_bytes must be >= 0");
  if (max_documents < 1) return InvalidArgumentError("jobs.max_documents must be >= 1");
  if (max_attempts < 1) return InvalidArgumentError("jobs.max_attempts must be >= 1");
  if (timeout_s < 0) return InvalidArgumentError("jobs.timeout_s must be >= 0 (0: no limit)");
  if (max_publish_attempts < 1) {
    return InvalidArgumentError("jobs.max_publish_attempts must be >= 1");
  }
  return OkStatus();
}

Status LogConfig::Validate() const {
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error"};
  if (!kLevels.count(level)) {
    return InvalidArgumentError("log.level '" + level +
                                "': expected trace, debug, info, warn or error");
  }
  if (format != "text" && format != "json") {
    return InvalidArgumentError("log.format '" + format + "': expected text or json");
  }
  return OkStatus();
}

Status MetricsConfig::Validate() const {
  // host:port, where host is an IPv4 address or a host name ([A-Za-z0-9.-])
  // and port is 0-65535. Checked strictly because civetweb reads more into
  // the string (',' lists, 's'/'r' port suffixes). No IPv6: Debian's civetweb
  // is built without it, so "[::1]:9464" could never be bound.
  auto bad = [this](const std::string& why) {
    return InvalidArgumentError("metrics.listen '" + listen + "': " + why +
                                " (expected host:port, e.g. 127.0.0.1:9464)");
  };
  if (!listen.empty() && listen[0] == '[') {
    return bad("IPv6 addresses are not supported; use an IPv4 address or host name");
  }
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = listen.substr(0, colon);
  std::string port = listen.substr(colon + 1);
  if (host.empty()) return bad("no host");
  constexpr const char* kHostChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
  if (host.find_first_not_of(kHostChars) != std::string::npos) {
    return bad("'" + host + "' is not an IPv4 address or host name");
  }
  bool digits = !port.empty() && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || port.size() > 5 || std::stoi(port) > 65535) {
    return bad("port '" + port + "' is not a number from 0 to 65535");
  }
  return OkStatus();
}

Status HttpConfig::Validate() const {
  server::ApiServerOptions o = server;
  Status listened = server::ParseListen(listen, &o.host, &o.port);
  if (!listened.ok()) return listened.WithContext("http.listen");
  if (!api_keys_file.empty()) o.api_keys = {"(from the file)"};
  Status st = o.Validate();
  if (!st.ok()) return st.WithContext("http");
  return OkStatus();
}

Status Config::Validate() const {
  ELLM_RETURN_IF_ERROR(model.Validate());
  ELLM_RETURN_IF_ERROR(kv.Validate());
  ELLM_RETURN_IF_ERROR(store.Validate());
  ELLM_RETURN_IF_ERROR(kafka.Validate());
  ELLM_RETURN_IF_ERROR(jobs.Validate());
  ELLM_RETURN_IF_ERROR(extract.Validate());
  ELLM_RETURN_IF_ERROR(log.Validate());
  ELLM_RETURN_IF_ERROR(metrics.Validate());
  ELLM_RETURN_IF_ERROR(http.Validate());
  return OkStatus();
}

namespace {

// extract.ocr, ocr_languages, ocr_dpi and ocr_page_s (ExtractOptions; the
// ranges are its Validate's, checked with the rest of the config).
Status ParseOcrOptions(const std::string& src, const YAML::Node& n, ingest::ExtractOptions* e) {
  ELLM_RETURN_IF_ERROR(GetEnum(
      src, n, "extract", "ocr",
      [](std::string_view s) -> StatusOr<ingest::OcrMode> {
        if (auto mode = ingest::ParseOcrMode(s)) return *mode;
        return InvalidArgumentError("'" + std::string(s) + "': expected auto, off or force");
      },
      e->ocr));
  ELLM_RETURN_IF_ERROR(Get(src, n, "extract", "ocr_languages", e->ocr_languages));
  ELLM_RETURN_IF_ERROR(Get(src, n, "extract", "ocr_dpi", e->ocr_dpi));
  return Get(src, n, "extract", "ocr_page_s", e->ocr_page_seconds);
}

// kafka: (secrets in properties as {file: PATH} or {credential: NAME}).
// Called inside ParseConfig's try: YAML errors surface there.
Status ParseKafka(const YAML::Node& n, const std::string& src, KafkaConfig& k) {
  ELLM_RETURN_IF_ERROR(CheckKeys(
      src, n, "kafka",
      {"enabled", "brokers", "group_id", "jobs_topic", "results_topic", "dead_letter_topic",
       "group_instance_id", "session_timeout_ms", "max_poll_interval_ms", "shutdown_grace_s",
       "transactions", "reply_topics", "properties"}));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "enabled", k.enabled));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "brokers", k.brokers));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "group_id", k.group_id));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "jobs_topic", k.jobs_topic));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "results_topic", k.results_topic));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "dead_letter_topic", k.dead_letter_topic));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "group_instance_id", k.group_instance_id));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "session_timeout_ms", k.session_timeout_ms));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "max_poll_interval_ms", k.max_poll_interval_ms));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "shutdown_grace_s", k.shutdown_grace_s));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "transactions", k.transactions));
  ELLM_RETURN_IF_ERROR(Get(src, n, "kafka", "reply_topics", k.reply_topics));
  if (YAML::Node p = n["properties"]) {
    if (!p.IsMap()) return At(src, p, "'kafka.properties' must be a mapping of strings");
    for (const auto& kv : p) {
      const std::string key = kv.first.as<std::string>();
      if (kv.second.IsScalar()) {
        k.properties[key] = kv.second.as<std::string>();
        continue;
      }
      // A secret kept out of this file: {file: PATH} or {credential: NAME}.
      const YAML::Node& v = kv.second;
      if (!v.IsMap() || v.size() != 1 || !(v["file"] || v["credential"]) ||
          !(v["file"] ? v["file"] : v["credential"]).IsScalar()) {
        return At(
            src, v,
            "kafka.properties." + key + ": expected a string, {file: PATH} or {credential: NAME}");
      }
      std::string path;
      if (v["file"]) {
        path = v["file"].as<std::string>();
      } else {
        const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
        if (dir == nullptr || *dir == '\0') {
          return At(src, v,
                    "kafka.properties." + key +
                        ": {credential: ...} needs $CREDENTIALS_DIRECTORY (LoadCredential= "
                        "in the unit)");
        }
        path = std::string(dir) + "/" + v["credential"].as<std::string>();
      }
      std::ifstream in(path, std::ios::binary);
      if (!in) return At(src, v, "kafka.properties." + key + ": cannot read '" + path + "'");
      std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) {
        secret.pop_back();
      }
      k.properties[key] = std::move(secret);
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& src) {
  Config c;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
    if (root.IsNull()) return c;  // an empty file means all defaults
    ELLM_RETURN_IF_ERROR(CheckKeys(src, root, "",
                                   {"model", "kv", "pipelines", "store", "kafka", "jobs", "extract",
                                    "log", "metrics", "http"}));
    if (YAML::Node n = root["model"]) {
      ELLM_RETURN_IF_ERROR(
          CheckKeys(src, n, "model",
                    {"path", "threads", "context", "micro_batch", "kv_type", "attn_weights",
                     "attn_scores", "sparse_top_k", "sparse_sink", "sparse_local", "numa",
                     "numa_node", "mlock", "chat_template"}));
      ModelConfig& m = c.model;
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "path", m.path));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "threads", m.engine.threads));
      ELLM_RETURN_IF_ERROR(GetEnum(src, n, "model", "numa", ParseNumaMode, m.engine.numa));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "numa_node", m.engine.numa_node));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "mlock", m.engine.mlock));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "chat_template", m.engine.chat_template));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "context", m.session.n_ctx));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "micro_batch", m.session.micro_batch));
      ELLM_RETURN_IF_ERROR(GetEnum(src, n, "model", "kv_type", ParseKvType, m.session.kv_type));
      ELLM_RETURN_IF_ERROR(GetEnum(src, n, "model", "attn_weights", ParseAttnWeights,
                                   m.session.bf16_attention_weights));
      ELLM_RETURN_IF_ERROR(
          GetEnum(src, n, "model", "attn_scores", ParseAttnScores, m.session.attn_scores));
      SparseAttentionOptions& sp = m.session.sparse_attention;
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "sparse_top_k", sp.top_k_blocks));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "sparse_sink", sp.sink_tokens));
      ELLM_RETURN_IF_ERROR(Get(src, n, "model", "sparse_local", sp.local_tokens));
    }
    if (YAML::Node n = root["kv"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "kv",
                                     {"memory_budget", "spill_dir", "spill_zstd_level",
                                      "spill_read", "prefix_cache_dir", "prefix_cache_mib"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kv", "prefix_cache_dir", c.kv.prefix_cache_dir));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kv", "prefix_cache_mib", c.kv.prefix_cache_mib));
      SessionOptions& session = c.model.session;
      if (YAML::Node b = n["memory_budget"]) {
        int64_t mib = 0;
        ELLM_RETURN_IF_ERROR(Get(src, n, "kv", "memory_budget", mib));
        if (mib < 0) return At(src, b, "kv.memory_budget must be >= 0 (MiB)");
        session.kv_memory_budget = static_cast<uint64_t>(mib) << 20;
      }
      ELLM_RETURN_IF_ERROR(Get(src, n, "kv", "spill_dir", session.spill_dir));
      ELLM_RETURN_IF_ERROR(Get(src, n, "kv", "spill_zstd_level", session.spill_zstd_level));
      if (YAML::Node r = n["spill_read"]) {
        std::string read;
        ELLM_RETURN_IF_ERROR(Get(src, n, "kv", "spill_read", read));
        if (read != "copy" && read != "map") {
          return At(src, r, "kv.spill_read must be copy or map, not '" + read + "'");
        }
        session.kv_spill_map = read == "map";
      }
    }
    if (YAML::Node n = root["pipelines"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "pipelines", {"dir"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "pipelines", "dir", c.pipelines.dir));
    }
    if (YAML::Node n = root["store"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "store", {"path", "retention_days"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "store", "path", c.store.path));
      ELLM_RETURN_IF_ERROR(Get(src, n, "store", "retention_days", c.store.retention_days));
    }
    if (YAML::Node n = root["kafka"]) ELLM_RETURN_IF_ERROR(ParseKafka(n, src, c.kafka));
    if (YAML::Node n = root["jobs"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "jobs",
                                     {"allowed_roots", "max_inline_bytes", "max_documents",
                                      "max_attempts", "max_publish_attempts", "timeout_s"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "jobs", "allowed_roots", c.jobs.allowed_roots));
      ELLM_RETURN_IF_ERROR(Get(src, n, "jobs", "max_inline_bytes", c.jobs.max_inline_bytes));
      ELLM_RETURN_IF_ERROR(Get(src, n, "jobs", "max_documents", c.jobs.max_documents));
      ELLM_RETURN_IF_ERROR(Get(src, n, "jobs", "max_attempts", c.jobs.max_attempts));
      ELLM_RETURN_IF_ERROR(
          Get(src, n, "jobs", "max_publish_attempts", c.jobs.max_publish_attempts));
      ELLM_RETURN_IF_ERROR(Get(src, n, "jobs", "timeout_s", c.jobs.timeout_s));
    }
    if (YAML::Node n = root["extract"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "extract",
                                     {"max_pages", "max_bytes", "timeout_s", "memory_mib", "ocr",
                                      "ocr_languages", "ocr_dpi", "ocr_page_s"}));
      ingest::ExtractOptions& e = c.extract;
      ELLM_RETURN_IF_ERROR(Get(src, n, "extract", "max_pages", e.max_pages));
      ELLM_RETURN_IF_ERROR(Get(src, n, "extract", "max_bytes", e.max_bytes));
      int64_t timeout_s = e.wall_timeout.count() / 1000;
      int64_t memory_mib = e.address_space_bytes >> 20;
      ELLM_RETURN_IF_ERROR(Get(src, n, "extract", "timeout_s", timeout_s));
      ELLM_RETURN_IF_ERROR(Get(src, n, "extract", "memory_mib", memory_mib));
      // Bounds that keep the conversions below from overflowing: a day,
      // and 1 TiB of address space.
      if (timeout_s < 2 || timeout_s > 86400) {
        return At(src, n["timeout_s"], "extract.timeout_s must be in [2, 86400]");
      }
      if (memory_mib < 64 || memory_mib > (int64_t{1} << 20)) {
        return At(src, n["memory_mib"], "extract.memory_mib must be in [64, 1048576]");
      }
      e.wall_timeout = std::chrono::seconds(timeout_s);
      e.cpu_seconds = static_cast<int>(timeout_s * 2 / 3);
      e.address_space_bytes = memory_mib << 20;
      ELLM_RETURN_IF_ERROR(ParseOcrOptions(src, n, &e));
    }
    if (YAML::Node n = root["log"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "log", {"level", "format"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "log", "level", c.log.level));
      ELLM_RETURN_IF_ERROR(Get(src, n, "log", "format", c.log.format));
    }
    if (YAML::Node n = root["metrics"]) {
      ELLM_RETURN_IF_ERROR(CheckKeys(src, n, "metrics", {"enabled", "listen"}));
      ELLM_RETURN_IF_ERROR(Get(src, n, "metrics", "enabled", c.metrics.enabled));
      ELLM_RETURN_IF_ERROR(Get(src, n, "metrics", "listen", c.metrics.listen));
    }
    if (YAML::Node n = root["http"]) {
      ELLM_RETURN_IF_ERROR(
          CheckKeys(src, n, "http",
                    {"enabled", "listen", "api_keys_file", "tls_cert_file", "tls_key_file",
                     "sessions", "max_queue", "context", "max_body_bytes", "read_timeout_s",
                     "write_timeout_s", "header_timeout_s", "max_connections",
                     "max_incomplete_per_client", "max_sessions_per_key", "cors_origins"}));
      HttpConfig& h = c.http;
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "enabled", h.enabled));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "listen", h.listen));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "api_keys_file", h.api_keys_file));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "tls_cert_file", h.server.tls_cert_file));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "tls_key_file", h.server.tls_key_file));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "sessions", h.server.sessions));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "max_queue", h.server.max_queue));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "context", h.server.n_ctx));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "max_body_bytes", h.server.max_body_bytes));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "read_timeout_s", h.server.read_timeout_s));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "write_timeout_s", h.server.write_timeout_s));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "header_timeout_s", h.server.header_timeout_s));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "max_connections", h.server.max_connections));
      ELLM_RETURN_IF_ERROR(
          Get(src, n, "http", "max_incomplete_per_client", h.server.max_incomplete_per_client));
      ELLM_RETURN_IF_ERROR(
          Get(src, n, "http", "max_sessions_per_key", h.server.max_sessions_per_key));
      ELLM_RETURN_IF_ERROR(Get(src, n, "http", "cors_origins", h.server.cors_origins));
      if (Status s = server::ParseListen(h.listen, &h.server.host, &h.server.port); !s.ok()) {
        return At(src, n["listen"], "http.listen: " + s.message());
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("config " + src + ":" + std::to_string(e.mark.line + 1) + ": " +
                                e.msg);
  }
  Status st = c.Validate();
  if (!st.ok()) return WithLine(src, root, st);
  return c;
}

StatusOr<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

}  // namespace ellm::app
