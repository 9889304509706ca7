#include "ellm/server/api_server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client_connection.h"
#include "ellm/engine/constraint.h"
#include "ellm/engine/reply.h"
#include "ellm/server/openai.h"

namespace ellm::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string RandomId(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kHex[rng() % 16];
  return id;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Equal in time whatever the first difference (keys are compared so).
bool SameKey(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(Dump(e.ToJson()), "application/json");
}

ApiError Error(int status, std::string type, std::string message, std::string code = "") {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

// A Prometheus histogram with fixed bounds.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // per bound, then +Inf
  double sum = 0;
  uint64_t n = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1) {}
  void Observe(double x) {
    size_t i = 0;
    while (i < bounds.size() && x > bounds[i]) ++i;
    ++counts[i];
    sum += x;
    ++n;
  }
  void Write(std::string& out, const std::string& name, const std::string& help) const {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cum = 0;
    for (size_t i = 0; i < bounds.size(); ++i) {
      cum += counts[i];
      out += name + "_bucket{le=\"" + json(bounds[i]).dump() + "\"} " + std::to_string(cum) + "\n";
    }
    cum += counts.back();
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
    out += name + "_sum " + json(sum).dump() + "\n" + name + "_count " + std::to_string(n) + "\n";
  }
};

}  // namespace

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError("listen address '" + listen + "': expected HOST:PORT");
  }
  std::string h = listen.substr(0, colon);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string digits = listen.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) > 65535) {
    return InvalidArgumentError("listen address '" + listen + "': the port must be 0..65535");
  }
  *host = h;
  *port = std::stoi(digits);
  return OkStatus();
}

Status ApiServerOptions::Validate() const {
  if (sessions < 1 || sessions > 64) return InvalidArgumentError("sessions must be 1..64");
  if (max_queue < 0 || max_queue > 4096) return InvalidArgumentError("max_queue must be 0..4096");
  if (n_ctx < 16) return InvalidArgumentError("context must be at least 16 tokens");
  if (max_body_bytes < 1024) return InvalidArgumentError("max_body_bytes must be at least 1024");
  if (read_timeout_s < 1 || write_timeout_s < 1) {
    return InvalidArgumentError("read and write timeouts must be at least 1 s");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return InvalidArgumentError("TLS needs both a certificate and a key file");
  }
  const bool loopback =
      host == "127.0.0.1" || host == "::1" || host == "localhost" || host.rfind("127.", 0) == 0;
  if (!loopback && api_keys.empty()) {
    return InvalidArgumentError("listening on '" + host +
                                "' (not loopback) needs API keys: set an API keys file");
  }
  return OkStatus();
}

StatusOr<std::vector<std::string>> ReadApiKeysFile(const std::string& given) {
  std::string path = given;
  if (given.rfind("credential:", 0) == 0) {
    const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
    if (dir == nullptr || *dir == '\0') {
      return InvalidArgumentError("API keys '" + given +
                                  "': $CREDENTIALS_DIRECTORY is not set (LoadCredential= in the "
                                  "unit provides it)");
    }
    path = std::string(dir) + "/" + given.substr(11);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return InvalidArgumentError("API keys file '" + path + "' cannot be read");
  }
  if ((st.st_mode & 007) != 0) {
    return FailedPreconditionError("API keys file '" + path +
                                   "' may be read by any user: chmod o-rwx it (0640 or 0600)");
  }
  std::ifstream in(path);
  if (!in) return InvalidArgumentError("API keys file '" + path + "' cannot be read");
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    keys.push_back(line.substr(b));
  }
  if (keys.empty()) return InvalidArgumentError("API keys file '" + path + "' holds no key");
  return keys;
}

struct ApiServer::State {
  std::atomic<JobService*> jobs{nullptr};
  // The model, once set.
  std::atomic<bool> ready{false};
  Engine* engine = nullptr;
  std::unique_ptr<DecodeBatcher> batcher;  // the sessions' tokens decode together
  std::string model_id, fingerprint;
  int64_t n_ctx = 0;

  // Sessions: one reply each at a time.
  struct Slot {
    std::unique_ptr<Session> session;
    bool busy = false;
    uint64_t last_used = 0;
  };
  std::mutex slots_mu;
  std::condition_variable slots_cv;
  std::vector<Slot> slots;
  uint64_t uses = 0;
  std::atomic<int> admitted{0};

  // Metrics.
  mutable std::mutex metrics_mu;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (endpoint, status)
  uint64_t prompt_tokens = 0, completion_tokens = 0, reused_tokens = 0;
  uint64_t client_gone = 0;  // replies ended because their client went away
  std::atomic<int> active_streams{0};
  Histogram ttft{{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}};
  Histogram itl{{0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1}};
  Histogram queue_wait{{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300}};

  // The idle session that can keep most of `prompt` (ReusablePrefix: a
  // follow-up finds its conversation, a new conversation one that began with
  // the same system prompt), else the one idle longest.
  size_t AcquireSlot(const std::vector<TokenId>& prompt) {
    std::unique_lock<std::mutex> lock(slots_mu);
    slots_cv.wait(lock, [&] {
      for (const Slot& s : slots) {
        if (!s.busy) return true;
      }
      return false;
    });
    size_t best = slots.size();
    size_t best_match = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].busy) continue;
      const auto match = static_cast<size_t>(ReusablePrefix(*slots[i].session, prompt));
      if (best == slots.size() || match > best_match ||
          (match == best_match && slots[i].last_used < slots[best].last_used)) {
        best = i;
        best_match = match;
      }
    }
    slots[best].busy = true;
    slots[best].last_used = ++uses;
    return best;
  }
  void ReleaseSlot(size_t i) {
    {
      std::lock_guard<std::mutex> lock(slots_mu);
      slots[i].busy = false;
    }
    slots_cv.notify_one();
  }
  void Count(const std::string& endpoint, int status) {
    std::lock_guard<std::mutex> lock(metrics_mu);
    ++requests[{endpoint, status}];
  }
};

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

ApiServer::~ApiServer() { Stop(); }

std::string ApiServer::address() const {
  const bool tls = !options_.tls_cert_file.empty();
  const bool v6 = options_.host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") +
         (v6 ? "[" + options_.host + "]" : options_.host) + ":" + std::to_string(port_);
}

Status ApiServer::SetModel(Engine* engine, const std::string& model_id,
                           const std::string& fingerprint) {
  State& s = *state_;
  s.engine = engine;
  s.model_id = model_id;
  s.fingerprint = fingerprint;
  s.n_ctx = engine->info().n_ctx_train > 0
                ? std::min<int64_t>(options_.n_ctx, engine->info().n_ctx_train)
                : options_.n_ctx;
  for (int i = 0; i < std::max(1, options_.sessions); ++i) {
    auto session = engine->NewSession({.n_ctx = s.n_ctx});
    if (!session.ok()) return session.status();
    s.slots.push_back({std::move(*session), false, 0});
  }
  s.batcher = std::make_unique<DecodeBatcher>(
      *engine, DecodeBatcherOptions{.max_batch = std::max(1, options_.sessions)});
  s.ready.store(true);
  return OkStatus();
}

std::string ApiServer::MetricsText() const {
  const State& st = *state_;
  std::string out;
  std::lock_guard<std::mutex> lock(st.metrics_mu);
  out += "# HELP ellm_http_requests_total HTTP API requests by endpoint and status\n";
  out += "# TYPE ellm_http_requests_total counter\n";
  for (const auto& [key, n] : st.requests) {
    out += "ellm_http_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP ellm_http_tokens_total Tokens of HTTP API requests: prompt, completion, and "
      "prompt tokens reused from a session\n# TYPE ellm_http_tokens_total counter\n";
  out += "ellm_http_tokens_total{kind=\"prompt\"} " + std::to_string(st.prompt_tokens) + "\n";
  out +=
      "ellm_http_tokens_total{kind=\"completion\"} " + std::to_string(st.completion_tokens) + "\n";
  out += "ellm_http_tokens_total{kind=\"reused\"} " + std::to_string(st.reused_tokens) + "\n";
  out +=
      "# HELP ellm_http_client_disconnects_total Replies ended early because their client "
      "went away (streamed or not)\n# TYPE ellm_http_client_disconnects_total counter\n";
  out += "ellm_http_client_disconnects_total " + std::to_string(st.client_gone) + "\n";
  out += "# HELP ellm_http_active_streams Streaming responses in progress\n";
  out += "# TYPE ellm_http_active_streams gauge\n";
  out += "ellm_http_active_streams " + std::to_string(st.active_streams.load()) + "\n";
  if (st.ready.load() && st.batcher) {
    const DecodeBatcher::Stats b = st.batcher->stats();
    out += "# HELP ellm_http_decode_passes_total Batched decode passes over the weights\n";
    out += "# TYPE ellm_http_decode_passes_total counter\n";
    out += "ellm_http_decode_passes_total " + std::to_string(b.passes) + "\n";
    out +=
        "# HELP ellm_http_decode_rows_total Tokens those passes evaluated (rows / passes: "
        "the mean batch)\n";
    out += "# TYPE ellm_http_decode_rows_total counter\n";
    out += "ellm_http_decode_rows_total " + std::to_string(b.rows) + "\n";
  }
  out += "# HELP ellm_http_queued_requests Requests admitted (running or waiting)\n";
  out += "# TYPE ellm_http_queued_requests gauge\n";
  out += "ellm_http_queued_requests " + std::to_string(st.admitted.load()) + "\n";
  st.ttft.Write(out, "ellm_http_time_to_first_token_seconds",
                "From the request's arrival to its first token");
  st.itl.Write(out, "ellm_http_inter_token_latency_seconds", "Between tokens of one reply");
  st.queue_wait.Write(out, "ellm_http_queue_wait_seconds",
                      "From arrival until a session and the engine were free");
  return out;
}

void ApiServer::SetJobs(JobService* jobs) { state_->jobs.store(jobs); }

void ApiServer::Stop() {
  if (http_) http_->stop();
}

bool ApiServer::Run() { return http_ && http_->listen_after_bind(); }

Status ApiServer::Bind() {
  const bool tls = !options_.tls_cert_file.empty() || !options_.tls_key_file.empty();
  if (tls) {
    if (options_.tls_cert_file.empty() || options_.tls_key_file.empty()) {
      return InvalidArgumentError("TLS needs both a certificate and a key file");
    }
    auto ssl = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                    options_.tls_key_file.c_str());
    if (!ssl->is_valid()) {
      return InvalidArgumentError("TLS: cannot use certificate '" + options_.tls_cert_file +
                                  "' with key '" + options_.tls_key_file +
                                  "' (unreadable, not PEM, or they do not match)");
    }
    http_ = std::move(ssl);
  } else {
    http_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& svr = *http_;
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a
  // second server on the same port would bind too and take half the requests.
  svr.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  State& st = *state_;
  const ApiServerOptions& o = options_;
  // Enough threads that /health, /metrics and 429s answer while every
  // session and queue place is taken.
  const size_t threads = static_cast<size_t>(std::max(1, o.sessions) + o.max_queue + 4);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(o.max_body_bytes);
  svr.set_read_timeout(o.read_timeout_s, 0);
  svr.set_write_timeout(o.write_timeout_s, 0);

  auto cors = [&o](const httplib::Request& req, httplib::Response& res) {
    if (o.cors_origins.empty() || !req.has_header("Origin")) return;
    const std::string origin = req.get_header_value("Origin");
    for (const std::string& allowed : o.cors_origins) {
      if (allowed == "*" || allowed == origin) {
        res.set_header("Access-Control-Allow-Origin", allowed == "*" ? "*" : origin);
        res.set_header("Vary", "Origin");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        return;
      }
    }
  };

  svr.set_pre_routing_handler([&o, &st, cors](const httplib::Request& req, httplib::Response& res) {
    cors(req, res);
    if (req.method == "OPTIONS") {
      res.status = o.cors_origins.empty() ? 405 : 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/health" || o.api_keys.empty()) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    bool ok = false;
    if (auth.rfind(prefix, 0) == 0) {
      const std::string key = auth.substr(prefix.size());
      for (const std::string& k : o.api_keys) ok |= SameKey(key, k);
    }
    if (!ok) {
      res.set_header("WWW-Authenticate", "Bearer");
      SendError(res, Error(401, "authentication_error",
                           auth.empty() ? "no API key given: send Authorization: Bearer <key>"
                                        : "the API key is not valid",
                           "invalid_api_key"));
      st.Count(req.path, 401);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      SendError(res, Error(404, "not_found_error", "no route " + req.method + " " + req.path));
    } else if (res.status == 413) {
      SendError(res, Error(413, "invalid_request_error", "the request body is too large",
                           "request_too_large"));
    } else if (res.status >= 400) {
      SendError(res, Error(res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                           "HTTP status " + std::to_string(res.status)));
    }
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(res, Error(500, "server_error", what));
      });

  svr.Get("/health", [&st](const httplib::Request&, httplib::Response& res) {
    if (!st.ready.load()) {
      res.status = 503;
      json body = Error(503, "unavailable_error", "the model is loading").ToJson();
      body["status"] = "loading";
      res.set_content(Dump(body), "application/json");
      return;
    }
    res.set_content(Dump({{"status", "ok"}}), "application/json");
  });

  auto unready = [&st](httplib::Response& res) {
    if (st.ready.load()) return false;
    res.set_header("Retry-After", "5");
    SendError(res, Error(503, "unavailable_error", "the model is loading; try again shortly"));
    return true;
  };

  svr.Get("/v1/models", [&st, unready](const httplib::Request& req, httplib::Response& res) {
    if (unready(res)) return;
    json model = {{"id", st.model_id},
                  {"object", "model"},
                  {"created", 0},
                  {"owned_by", "ellm"},
                  {"context_length", st.n_ctx}};
    res.set_content(Dump({{"object", "list"}, {"data", json::array({model})}}), "application/json");
    st.Count(req.path, 200);
  });

  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsText(), "text/plain; version=0.0.4");
  });

  // Document jobs: the message is built here (from JSON or an upload) and
  // checked by the job service exactly as a Kafka message.
  auto send_job = [&st](const httplib::Request& req, httplib::Response& res, const JobAnswer& a) {
    res.status = a.status;
    res.set_content(Dump(a.body), "application/json");
    st.Count(req.matches.empty() ? req.path : "/v1/jobs", a.status);
  };
  auto no_jobs = [&st, unready](httplib::Response& res) {
    if (st.jobs.load() != nullptr) return false;
    if (unready(res)) return true;  // 503 while loading: jobs may come with the model
    SendError(res, Error(404, "not_found_error", "document jobs are not served here"));
    return true;
  };
  svr.Post(
      "/v1/jobs", [&st, no_jobs, send_job](const httplib::Request& req, httplib::Response& res) {
        if (no_jobs(res)) return;
        json message = json::object();
        std::vector<JobService::Upload> uploads;
        if (req.is_multipart_form_data()) {
          // Fields pipeline, params (JSON text), id; every file part a document.
          for (const auto& [field, part] : req.files) {
            if (!part.filename.empty()) {
              uploads.push_back({part.filename, part.content});
            } else if (field == "pipeline" || field == "id") {
              message[field] = part.content;
            } else if (field == "params") {
              json params = json::parse(part.content, nullptr, false);
              if (params.is_discarded()) {
                return SendError(res, InvalidRequest("params is not valid JSON", "params"));
              }
              message["params"] = params;
            } else {
              return SendError(res, InvalidRequest("unknown form field '" + field +
                                                       "' (pipeline, params, id, and files)",
                                                   field));
            }
          }
          message["documents"] = json::array();
        } else {
          message = json::parse(req.body, nullptr, false);
          if (message.is_discarded() || !message.is_object()) {
            return SendError(
                res, InvalidRequest("the request body is not a JSON object", "", "invalid_json"));
          }
        }
        if (!message.contains("version")) message["version"] = 1;
        const std::string key = req.get_header_value("Idempotency-Key");
        if (!key.empty()) {
          if (message.contains("id") && message["id"] != key) {
            return SendError(res, InvalidRequest("the body's id differs from Idempotency-Key", "id",
                                                 "key_mismatch"));
          }
          message["id"] = key;
        } else if (!message.contains("id")) {
          message["id"] = RandomId("http-");
        }
        send_job(req, res, st.jobs.load()->Submit(std::move(message), std::move(uploads)));
      });
  svr.Get(R"(/v1/jobs/([^/]+))",
          [&st, no_jobs, send_job](const httplib::Request& req, httplib::Response& res) {
            if (no_jobs(res)) return;
            send_job(req, res, st.jobs.load()->Get(req.matches[1]));
          });
  svr.Get(
      "/v1/jobs", [&st, no_jobs, send_job](const httplib::Request& req, httplib::Response& res) {
        if (no_jobs(res)) return;
        int limit = 20;
        if (req.has_param("limit")) {
          const std::string l = req.get_param_value("limit");
          if (l.empty() || l.size() > 4 || l.find_first_not_of("0123456789") != std::string::npos ||
              std::stoi(l) < 1 || std::stoi(l) > 1000) {
            return SendError(res, InvalidRequest("limit must be 1..1000", "limit"));
          }
          limit = std::stoi(l);
        }
        send_job(req, res, st.jobs.load()->List(req.get_param_value("status"), limit));
      });

  auto completion = [&st, &o, unready](const httplib::Request& req, httplib::Response& res,
                                       bool chat) {
    const auto arrived = Clock::now();
    const std::string endpoint = req.path;
    auto fail = [&](const ApiError& e) {
      SendError(res, e);
      st.Count(endpoint, e.status);
    };
    if (unready(res)) return st.Count(endpoint, 503);
    ParsedRequest parsed = ParseCompletionRequest(req.body, chat);
    if (parsed.error) return fail(*parsed.error);
    auto request = std::make_shared<CompletionRequest>(std::move(parsed.request));
    const CompletionRequest& r = *request;
    Engine& engine = *st.engine;
    if (!r.model.empty() && r.model != st.model_id && r.model != engine.info().name) {
      ApiError e =
          Error(404, "invalid_request_error",
                "the model '" + r.model + "' does not exist; this server has '" + st.model_id + "'",
                "model_not_found");
      e.param = "model";
      return fail(e);
    }
    const Tokenizer& tok = engine.tokenizer();
    std::string text = r.prompt;
    if (chat) {
      if (!engine.chat_template().ok()) {
        return fail(Error(
            500, "server_error",
            "the model has no usable chat template: " + engine.chat_template().status().message()));
      }
      auto rendered = engine.chat_template()->Apply(r.messages, true);
      if (!rendered.ok()) {
        return fail(InvalidRequest("messages: " + rendered.status().message(), "messages"));
      }
      text = std::move(*rendered);
    }
    auto prompt = std::make_shared<std::vector<TokenId>>(tok.Encode(text, true, true));
    const int64_t n_prompt = static_cast<int64_t>(prompt->size());
    if (n_prompt == 0)
      return fail(InvalidRequest("the prompt is empty", chat ? "messages" : "prompt"));
    const int64_t room = st.n_ctx - n_prompt;
    if (room <= 0 || (r.max_tokens && *r.max_tokens > room)) {
      std::string m = "This model's maximum context length is " + std::to_string(st.n_ctx) +
                      " tokens. However, you requested " +
                      std::to_string(n_prompt + r.max_tokens.value_or(0)) + " tokens (" +
                      std::to_string(n_prompt) + " in the " + (chat ? "messages" : "prompt") +
                      ", " + std::to_string(r.max_tokens.value_or(0)) +
                      " in the completion). Please reduce the length of the " +
                      (chat ? "messages" : "prompt") + " or completion.";
      return fail(InvalidRequest(m, chat ? "messages" : "prompt", "context_length_exceeded"));
    }
    // One reply per choice (`n`), each with its own options (a seeded
    // request's choice i samples with seed + i), its JSON constraint (it
    // keeps the document's state) and its tokens' log probabilities (filled
    // by the reply as it goes, read by the stream as its text is released).
    struct Choice {
      ReplyOptions ro;
      std::unique_ptr<JsonConstraint> constraint;
      std::vector<TokenLogprob> logprobs;
    };
    auto choices = std::make_shared<std::vector<Choice>>(static_cast<size_t>(r.n));
    for (int i = 0; i < r.n; ++i) {
      Choice& c = (*choices)[static_cast<size_t>(i)];
      if (r.format == ResponseFormat::kJsonObject) {
        c.constraint = JsonConstraint::AnyObject(tok);
      } else if (r.format == ResponseFormat::kJsonSchema) {
        auto made = JsonConstraint::FromSchema(r.json_schema, tok);
        if (!made.ok()) {
          return fail(
              InvalidRequest("response_format.json_schema.schema: " + made.status().message(),
                             "response_format.json_schema.schema"));
        }
        c.constraint = std::move(*made);
      }
      c.ro.sampling = r.sampling;
      c.ro.sampling.seed = r.seeded ? r.sampling.seed + static_cast<uint64_t>(i)
                                    : static_cast<uint64_t>(std::random_device{}());
      c.ro.max_tokens = r.max_tokens.value_or(room);
      c.ro.stop = r.stop;
      c.ro.constraint = c.constraint.get();
      if (r.logprobs) {
        c.ro.logprobs = &c.logprobs;
        c.ro.top_logprobs = r.top_logprobs;
      }
    }
    // Admission: past the queue's bound, 429 at once.
    const int limit = std::max(1, o.sessions) + o.max_queue;
    if (st.admitted.fetch_add(1) >= limit) {
      st.admitted.fetch_sub(1);
      res.set_header("Retry-After", "1");
      return fail(Error(429, "rate_limit_error",
                        "the server is busy (" + std::to_string(limit) +
                            " requests running or queued); retry after a second",
                        "rate_limit_exceeded"));
    }
    auto admitted = std::shared_ptr<void>(nullptr, [&st](void*) { st.admitted.fetch_sub(1); });

    const Tokenizer* tokp = &tok;  // the engine's: outlives the stream
    // Choice i's entries [*from, end) whose pieces begin before `upto` bytes
    // of its text.
    auto entries = [choices, tokp](int i, size_t* from, size_t upto) {
      const std::vector<TokenLogprob>& lps = (*choices)[static_cast<size_t>(i)].logprobs;
      std::vector<LogprobEntry> out;
      for (; *from < lps.size() && lps[*from].text_offset < upto; ++*from) {
        const TokenLogprob& t = lps[*from];
        LogprobEntry e{
            tokp->TokenToPiece(t.token), t.logprob, {}, static_cast<int64_t>(t.text_offset)};
        for (const auto& [tid, lp] : t.top) e.top.emplace_back(tokp->TokenToPiece(tid), lp);
        out.push_back(std::move(e));
      }
      return out;
    };
    const std::string id = RandomId(chat ? "chatcmpl-" : "cmpl-");
    const int64_t created = UnixNow();

    // Runs choice i's reply in a session with interactive turns; `on_text`
    // gets the pieces. A client that goes away (`conn`) ends it at the next
    // prefill slice or token. Records the metrics.
    const ClientConnection conn(req);
    auto run = [&st, prompt, choices, arrived, conn](int i, const ReplyTextFn& on_text) {
      const size_t slot = st.AcquireSlot(*prompt);
      StatusOr<Reply> reply = InternalError("not run");
      {
        // The reply takes the engine's turns itself: one for its prefill,
        // then one per token shared with the other sessions' (batched decode).
        ReplyOptions batched = (*choices)[static_cast<size_t>(i)].ro;
        batched.batcher = st.batcher.get();
        const auto started = Clock::now();
        auto last = started;
        bool first = true;
        reply = GenerateReply(
            *st.slots[slot].session, st.engine->tokenizer(), *prompt, batched,
            [&](std::string_view piece) {
              const auto now = Clock::now();
              {
                std::lock_guard<std::mutex> lock(st.metrics_mu);
                if (first) {
                  st.ttft.Observe(Seconds(arrived, now));
                  first = false;
                } else {
                  st.itl.Observe(Seconds(last, now));
                }
              }
              last = now;
              if (conn.Gone()) return false;
              return on_text ? on_text(piece) : true;
            },
            [&](int64_t, int64_t) { return !conn.Gone(); });
        std::lock_guard<std::mutex> lock(st.metrics_mu);
        st.queue_wait.Observe(Seconds(arrived, started));
        if (reply.ok() && reply->finish == FinishReason::kCancelled) ++st.client_gone;
        if (reply.ok()) {
          st.prompt_tokens += static_cast<uint64_t>(reply->prompt_tokens);
          st.completion_tokens += static_cast<uint64_t>(reply->completion_tokens);
          st.reused_tokens += static_cast<uint64_t>(reply->reused_tokens);
        }
      }
      st.ReleaseSlot(slot);
      return reply;
    };
    // Runs every choice, the first on this thread, the others on their own
    // (their tokens decode together through the batcher).
    auto run_all = [n = r.n](const std::function<StatusOr<Reply>(int)>& one) {
      std::vector<StatusOr<Reply>> replies(static_cast<size_t>(n), InternalError("not run"));
      std::vector<std::thread> others;
      for (int i = 1; i < n; ++i) {
        others.emplace_back([&replies, &one, i] { replies[static_cast<size_t>(i)] = one(i); });
      }
      replies[0] = one(0);
      for (std::thread& t : others) t.join();
      return replies;
    };
    // What the response reports: the prompt once, every choice's tokens.
    auto usage = [](const std::vector<StatusOr<Reply>>& replies) {
      Usage u{replies[0]->prompt_tokens, 0, replies[0]->reused_tokens};
      for (const StatusOr<Reply>& reply : replies) u.completion_tokens += reply->completion_tokens;
      return u;
    };

    if (!r.stream) {
      std::vector<StatusOr<Reply>> replies = run_all([&run](int i) { return run(i, nullptr); });
      std::vector<ChoiceResult> results;
      for (int i = 0; i < r.n; ++i) {
        const StatusOr<Reply>& reply = replies[static_cast<size_t>(i)];
        if (!reply.ok()) {
          return fail(
              Error(500, "server_error", "generation failed: " + reply.status().ToString()));
        }
        ChoiceResult c{reply->text, std::string(FinishReasonName(reply->finish)), nullptr};
        if (r.logprobs) {
          size_t from = 0;
          c.logprobs = LogprobsJson(r, entries(i, &from, reply->text.size()));
        }
        results.push_back(std::move(c));
      }
      res.set_content(Dump(CompletionResponse(r, id, created, st.model_id, st.fingerprint, results,
                                              usage(replies))),
                      "application/json");
      st.Count(endpoint, 200);
      return;
    }
    st.Count(endpoint, 200);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider("text/event-stream", [&st, request, run, run_all, usage, id,
                                                           created, admitted, entries](
                                                              size_t, httplib::DataSink& sink) {
      const CompletionRequest& sr = *request;
      st.active_streams.fetch_add(1);
      // The choices' threads share the sink.
      std::mutex sink_mu;
      bool open = true;
      auto send = [&](const json& chunk) {
        const std::string event = SseEvent(chunk);
        std::lock_guard<std::mutex> lock(sink_mu);
        open = open && sink.write(event.data(), event.size());
        return open;
      };
      auto stream_one = [&](int i) {
        bool first = true;
        size_t released = 0, logprobs_sent = 0;
        StatusOr<Reply> reply = run(i, [&](std::string_view piece) {
          const std::string delta(piece);
          released += piece.size();
          json logprobs;
          if (sr.logprobs) logprobs = LogprobsJson(sr, entries(i, &logprobs_sent, released));
          const bool ok = send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, &delta,
                                           first, nullptr, sr.logprobs ? &logprobs : nullptr, i));
          first = false;
          return ok;
        });
        if (reply.ok() && reply->finish != FinishReason::kCancelled) {
          const std::string finish(FinishReasonName(reply->finish));
          if (first) {
            const std::string empty;
            send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, &empty, true, nullptr,
                             nullptr, i));
          }
          send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, nullptr, false, &finish,
                           nullptr, i));
        }
        return reply;
      };
      std::vector<StatusOr<Reply>> replies = run_all(stream_one);
      bool all_ok = true;
      for (const StatusOr<Reply>& reply : replies) {
        if (!reply.ok() && all_ok) {
          all_ok = false;
          // The status is sent; the stream carries the error as OpenAI's does.
          send(Error(500, "server_error", "generation failed: " + reply.status().ToString())
                   .ToJson());
        }
      }
      if (all_ok && sr.include_usage) {
        send(UsageChunk(sr, id, created, st.model_id, st.fingerprint, usage(replies)));
      }
      if (open) {
        static const std::string kDone = "data: [DONE]\n\n";
        sink.write(kDone.data(), kDone.size());
        sink.done();
      }
      st.active_streams.fetch_sub(1);
      return open;
    });
  };
  svr.Post("/v1/chat/completions",
           [completion](const httplib::Request& req, httplib::Response& res) {
             completion(req, res, true);
           });
  svr.Post("/v1/completions", [completion](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, false);
  });

  if (o.port == 0) {
    port_ = svr.bind_to_any_port(o.host);
    if (port_ <= 0) return UnavailableError("cannot listen on " + o.host + " (any port)");
  } else {
    if (!svr.bind_to_port(o.host, o.port)) {
      return UnavailableError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                              " (in use, or not an address of this host)");
    }
    port_ = o.port;
  }
  return OkStatus();
}

}  // namespace ellm::server
