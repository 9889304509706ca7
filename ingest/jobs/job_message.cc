#include "ellm/ingest/job_message.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ellm/base/json.h"

namespace ellm::ingest {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxIdLength = 200;
constexpr size_t kMaxNameLength = 255;

struct Fail {
  std::string code;
  std::string message;
};

bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::optional<std::string> RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) return std::nullopt;
  return std::string(buf);
}

// True when canonical `path` is `root` or lies below it.
bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

std::optional<Fail> ParseDocument(const json& d, size_t i, const JobMessageLimits& limits,
                                  JobDocument& out) {
  std::string where = "documents[" + std::to_string(i) + "]";
  if (!d.is_object()) return Fail{"invalid_message", where + " must be an object"};
  for (const auto& [k, v] : d.items()) {
    if (k != "path" && k != "name" && k != "content_base64") {
      return Fail{"invalid_message", where + " has unknown key '" + k +
                                         "' (expected 'path', or 'name' and 'content_base64')"};
    }
  }
  bool has_path = d.contains("path"), has_inline = d.contains("content_base64");
  if (has_path == has_inline) {
    return Fail{"invalid_message",
                where + " needs exactly one of 'path' or 'content_base64' (with 'name')"};
  }
  if (has_inline) {
    if (!d.contains("name") || !d["name"].is_string() || !d["content_base64"].is_string()) {
      return Fail{"invalid_message", where +
                                         ": inline documents need string 'name' and "
                                         "'content_base64'"};
    }
    out.is_inline = true;
    out.name = d["name"].get<std::string>();
    if (out.name.empty() || out.name.size() > kMaxNameLength ||
        out.name.find('/') != std::string::npos) {
      return Fail{"invalid_message", where + ".name must be a file name (1-255 chars, no '/')"};
    }
    const std::string& b64 = d["content_base64"].get_ref<const std::string&>();
    if (b64.size() / 4 * 3 > limits.max_inline_bytes + 2) {
      return Fail{"inline_too_large",
                  where + " ('" + out.name + "') is about " + std::to_string(b64.size() / 4 * 3) +
                      " bytes; inline documents are limited to " +
                      std::to_string(limits.max_inline_bytes) + " bytes (send a path instead)"};
    }
    auto bytes = DecodeBase64(b64);
    if (!bytes) return Fail{"invalid_message", where + ".content_base64 is not valid base64"};
    if (bytes->size() > limits.max_inline_bytes) {
      return Fail{"inline_too_large", where + " ('" + out.name + "') is " +
                                          std::to_string(bytes->size()) +
                                          " bytes; inline documents are limited to " +
                                          std::to_string(limits.max_inline_bytes) + " bytes"};
    }
    out.inline_bytes = std::move(*bytes);
    return std::nullopt;
  }
  if (d.contains("name")) return Fail{"invalid_message", where + ": 'name' is only for inline"};
  if (!d["path"].is_string()) return Fail{"invalid_message", where + ".path must be a string"};
  out.path = d["path"].get<std::string>();
  if (out.path.empty() || out.path[0] != '/') {
    return Fail{"invalid_message", where + ".path must be absolute, got '" + out.path + "'"};
  }
  auto resolved = RealPath(out.path);
  if (!resolved) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return Fail{"document_not_found", where + ": no such file '" + out.path + "'"};
    }
    return Fail{"document_unreadable",
                where + ": cannot resolve '" + out.path + "': " + std::strerror(err)};
  }
  for (const std::string& root : limits.allowed_roots) {
    auto r = RealPath(root);
    if (r && Under(*resolved, *r)) {
      out.allowed_root = *r;
      break;
    }
  }
  if (out.allowed_root.empty()) {
    std::string roots;
    for (const auto& r : limits.allowed_roots) roots += (roots.empty() ? "" : ", ") + r;
    return Fail{"path_not_allowed", where + ": '" + out.path + "' resolves to '" + *resolved +
                                        "', outside the allowed input directories (" +
                                        (roots.empty() ? "none configured" : roots) + ")"};
  }
  struct stat st;
  if (stat(resolved->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Fail{"document_unreadable", where + ": '" + out.path + "' is not a regular file"};
  }
  if (access(resolved->c_str(), R_OK) != 0) {
    return Fail{"document_unreadable",
                where + ": '" + out.path + "' is not readable: " + std::strerror(errno)};
  }
  out.resolved_path = *resolved;
  return std::nullopt;
}

std::optional<Fail> Parse(const json& j, std::string_view key, const JobMessageLimits& limits,
                          JobMessage& m) {
  if (!j.is_object()) return Fail{"invalid_message", "the message must be a JSON object"};
  // The id first, so that every later error can be stored under it.
  if (j.contains("id") && j["id"].is_string() && ValidId(j["id"].get<std::string>())) {
    m.id = j["id"].get<std::string>();
  }
  if (j.contains("pipeline") && j["pipeline"].is_string()) {
    m.pipeline = j["pipeline"].get<std::string>();
  }
  static const std::array<std::string_view, 7> kKeys = {
      "version", "id", "pipeline", "documents", "params", "reply_to", "timeout_s"};
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (auto name : kKeys) known = known || name == k;
    if (!known) {
      return Fail{"invalid_message",
                  "unknown key '" + k +
                      "' (expected version, id, pipeline, documents, params, reply_to, timeout_s)"};
    }
  }
  if (j.contains("version") && !(j["version"].is_number_integer() && j["version"] == 1)) {
    return Fail{"unsupported_version",
                "'version' is " + j["version"].dump() + "; this ellm reads version 1"};
  }
  if (!j.contains("id")) return Fail{"invalid_message", "missing 'id'"};
  if (m.id.empty()) {
    return Fail{"invalid_message",
                "'id' must be a string of 1-200 characters from [A-Za-z0-9._:-]"};
  }
  if (m.id.rfind(kHttpJobIdPrefix, 0) == 0) {
    m.id.clear();  // stored under its topic position, never in the HTTP jobs' names
    return Fail{"invalid_message", "'id' may not start with '" + std::string(kHttpJobIdPrefix) +
                                       "': the job store keeps jobs sent over HTTP under it"};
  }
  if (!key.empty() && key != m.id) {
    return Fail{"key_mismatch", "the Kafka key '" + std::string(key) + "' differs from the id '" +
                                    m.id + "' (produce jobs keyed by their id)"};
  }
  if (!j.contains("pipeline")) return Fail{"invalid_message", "missing 'pipeline'"};
  if (!j["pipeline"].is_string()) return Fail{"invalid_message", "'pipeline' must be a string"};
  if (!limits.pipelines.count(m.pipeline)) {
    std::string names;
    for (const auto& p : limits.pipelines) names += (names.empty() ? "" : ", ") + p;
    return Fail{"unknown_pipeline",
                "unknown pipeline '" + m.pipeline + "' (this daemon serves: " + names + ")"};
  }
  if (j.contains("params")) {
    if (!j["params"].is_object()) return Fail{"invalid_message", "'params' must be an object"};
    m.params_json = j["params"].dump();
  }
  if (j.contains("reply_to")) {
    if (!j["reply_to"].is_string() || j["reply_to"].get<std::string>().empty()) {
      return Fail{"invalid_message", "'reply_to' must be a non-empty topic name"};
    }
    m.reply_to = j["reply_to"].get<std::string>();
    // Kafka's own rule for a topic name: a result that could never be
    // published must not get as far as running.
    const std::string& t = *m.reply_to;
    const bool legal =
        t.size() <= 249 && t != "." && t != ".." && std::all_of(t.begin(), t.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        });
    if (!legal) {
      return Fail{"invalid_message",
                  "'reply_to' is not a legal Kafka topic name (1-249 of [A-Za-z0-9._-], not "
                  "'.' or '..'): '" +
                      t.substr(0, 80) + "'"};
    }
    if (std::optional<std::string> why = ReplyToRefusal(t, limits)) {
      return Fail{"reply_to_not_allowed", *why};
    }
  }
  if (j.contains("timeout_s")) {
    const json& t = j["timeout_s"];
    constexpr int64_t kMax = 2147483647;  // about 68 years: no real job, no overflow
    if (!t.is_number_integer() || t.get<int64_t>() <= 0 || t.get<int64_t>() > kMax) {
      return Fail{"invalid_message",
                  "'timeout_s' must be a positive integer (seconds one attempt may run), not " +
                      t.dump().substr(0, 40)};
    }
    m.timeout_s = t.get<int64_t>();
  }
  if (!j.contains("documents")) return Fail{"invalid_message", "missing 'documents'"};
  const json& docs = j["documents"];
  if (!docs.is_array() || docs.empty()) {
    return Fail{"invalid_message", "'documents' must be a non-empty array"};
  }
  if (docs.size() > limits.max_documents) {
    return Fail{"invalid_message", "'documents' has " + std::to_string(docs.size()) +
                                       " entries; at most " + std::to_string(limits.max_documents) +
                                       " are allowed"};
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    JobDocument d;
    if (auto f = ParseDocument(docs[i], i, limits, d)) return f;
    m.documents.push_back(std::move(d));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ReplyToRefusal(const std::string& topic,
                                          const JobMessageLimits& limits) {
  const std::string quoted = "'reply_to' '" + topic + "'";
  if (topic.starts_with("__")) return quoted + " is one of Kafka's internal topics";
  if (limits.reserved_topics.contains(topic)) {
    return quoted + " is the daemon's own jobs or dead-letter topic";
  }
  if (limits.reply_topics.empty()) return std::nullopt;
  for (const std::string& allowed : limits.reply_topics) {
    const bool prefix = allowed.ends_with('*');
    if (prefix ? topic.starts_with(std::string_view(allowed).substr(0, allowed.size() - 1))
               : topic == allowed) {
      return std::nullopt;
    }
  }
  return quoted + " is not among kafka.reply_topics";
}

ParsedJob ParseJobMessage(std::string_view payload, std::string_view key,
                          const JobMessageLimits& limits) {
  ParsedJob out;
  if (payload.size() > limits.max_message_bytes) {
    out.error_code = "invalid_message";
    out.error = "the message is " + std::to_string(payload.size()) + " bytes; the limit is " +
                std::to_string(limits.max_message_bytes);
    return out;
  }
  // Bounded before anything recursive (params' dump, version's) sees it: a
  // message nested past the limit would otherwise take the process down
  // before its attempt is recorded, and come back on every restart.
  StatusOr<json> j = ParseJson(payload, {.max_bytes = limits.max_message_bytes});
  if (!j.ok()) {
    const bool syntax = j.status().reason() == kJsonSyntax;
    out.error_code = syntax ? "invalid_json" : "invalid_message";
    out.error = (syntax ? "the message is " : "the message: ") + j.status().message();
    return out;
  }
  if (auto f = Parse(*j, key, limits, out.message)) {
    out.error_code = f->code;
    out.error = f->message;
  }
  return out;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad) return std::nullopt;  // data after padding
      v[k] = value(c);
      if (v[k] < 0) return std::nullopt;
    }
    uint32_t n =
        (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

std::string EncodeBase64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 2]));
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[n & 63] : '=');
  }
  return out;
}

}  // namespace ellm::ingest
