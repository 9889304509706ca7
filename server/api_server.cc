#include "ellm/server/api_server.h"

#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "completion_runner.h"
#include "ellm/base/json.h"
#include "ellm/base/socket_options.h"
#include "ellm/server/front_gate.h"
#include "ellm/server/job_request.h"
#include "ellm/server/metrics_labels.h"
#include "ellm/server/openai.h"
#include "ellm/server/request_guard.h"
#include "server_state.h"

namespace ellm::server {
namespace {

using nlohmann::json;
// Equal in time whatever the first difference (keys are compared so).
bool SameKey(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// A multipart request's parts, in the order the HTTP library keeps them.
std::vector<FormPart> FormParts(const httplib::Request& req) {
  std::vector<FormPart> parts;
  for (const auto& [field, part] : req.files) parts.push_back({field, part.filename, part.content});
  return parts;
}

// The front gate's connection counters (front_gate.h).
void WriteGateMetrics(const FrontGate::Stats& g, std::string& out) {
  out += "# HELP ellm_http_open_connections Client connections open at the front gate\n";
  out += "# TYPE ellm_http_open_connections gauge\n";
  out += "ellm_http_open_connections " + std::to_string(g.open) + "\n";
  out +=
      "# HELP ellm_http_connections_total Client connections by how the front gate ended "
      "them: forwarded (a whole request), header_timeout (not whole in time), refused (a "
      "malformed or oversize head), evicted (the oldest incomplete one at a cap), busy (503), "
      "stalled (its client stopped reading the reply)\n# TYPE ellm_http_connections_total "
      "counter\n";
  const std::pair<const char*, uint64_t> outcomes[] = {
      {"forwarded", g.forwarded},  {"header_timeout", g.header_timeout},
      {"refused", g.refused_head}, {"evicted", g.evicted},
      {"busy", g.over_capacity},   {"stalled", g.stalled}};
  for (const auto& [name, n] : outcomes) {
    out += std::string("ellm_http_connections_total{outcome=\"") + name + "\"} " +
           std::to_string(n) + "\n";
  }
}

// Document jobs: the message is built here (from JSON or an upload) and
// checked by the job service exactly as a Kafka message.
void RouteJobs(httplib::Server& svr, ServerState& st) {
  auto unready = [&st](httplib::Response& res) { return AnswerUnready(st, res); };
  // `route`: the pattern served, the metrics' label.
  auto send_job = [&st](std::string_view route, httplib::Response& res, const JobAnswer& a) {
    res.status = a.status;
    res.set_content(Dump(a.body), "application/json");
    st.Count(route, a.status);
  };
  auto no_jobs = [&st, unready](httplib::Response& res) {
    if (st.jobs.load() != nullptr) return false;
    if (unready(res)) return true;  // 503 while loading: jobs may come with the model
    SendError(res, Error(404, "not_found_error", "document jobs are not served here"));
    return true;
  };
  svr.Post("/v1/jobs", [&st, no_jobs, send_job](const httplib::Request& req,
                                                httplib::Response& res) {
    if (no_jobs(res)) return;
    JobRequestOrError request = req.is_multipart_form_data() ? JobRequestFromForm(FormParts(req))
                                                             : JobRequestFromBody(req.body);
    if (auto* parsed = std::get_if<JobRequest>(&request)) {
      request = FinishJobRequest(std::move(*parsed), req.get_header_value("Idempotency-Key"),
                                 RandomId("http-"));
    }
    if (auto* error = std::get_if<ApiError>(&request)) return SendError(res, *error);
    JobRequest& job = std::get<JobRequest>(request);
    send_job("/v1/jobs", res,
             st.jobs.load()->Submit(std::move(job.message), std::move(job.uploads)));
  });
  svr.Get(R"(/v1/jobs/([^/]+))",
          [&st, no_jobs, send_job](const httplib::Request& req, httplib::Response& res) {
            if (no_jobs(res)) return;
            send_job("/v1/jobs/{id}", res, st.jobs.load()->Get(req.matches[1]));
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
        send_job("/v1/jobs", res, st.jobs.load()->List(req.get_param_value("status"), limit));
      });
}

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
  if (read_timeout_s < 1 || write_timeout_s < 1 || header_timeout_s < 1) {
    return InvalidArgumentError("read, write and header timeouts must be at least 1 s");
  }
  if (max_sessions_per_key < 0) return InvalidArgumentError("max_sessions_per_key must be >= 0");
  if (max_connections < 8 || max_incomplete_per_client < 1) {
    return InvalidArgumentError(
        "max_connections must be at least 8 and max_incomplete_per_client at least 1");
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

struct ApiServer::State : ServerState {};

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {
  state_->per_key_limit = options_.max_sessions_per_key > 0 ? options_.max_sessions_per_key
                          : options_.api_keys.size() >= 2   ? std::max(1, options_.sessions - 1)
                                                            : 0;
}

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
    out += "ellm_http_requests_total{endpoint=\"" + EscapeLabelValue(key.first) + "\",status=\"" +
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
  if (gate_) WriteGateMetrics(gate_->stats(), out);
  st.ttft.Write(out, "ellm_http_time_to_first_token_seconds",
                "From the request's arrival to its first token");
  st.itl.Write(out, "ellm_http_inter_token_latency_seconds", "Between tokens of one reply");
  st.queue_wait.Write(out, "ellm_http_queue_wait_seconds",
                      "From arrival until a session and the engine were free");
  return out;
}

void ApiServer::SetJobs(JobService* jobs) { state_->jobs.store(jobs); }

void ApiServer::Stop() {
  if (gate_) gate_->Stop();
  if (http_) http_->stop();
}

bool ApiServer::Run() {
  if (!http_) return false;
  std::thread gate;
  if (gate_) gate = std::thread([this] { gate_->Run(); });
  const bool served = http_->listen_after_bind();
  if (gate_) {
    gate_->Stop();
    gate.join();
  }
  return served;
}

// cpp-httplib on a private loopback port behind the front gate, which
// owns the public socket and terminates TLS when configured (front_gate.h).
Status ApiServer::BindGate() {
  FrontGateOptions g;
  g.host = options_.host;
  g.port = options_.port;
  g.head.max_body_bytes = options_.max_body_bytes;
  g.header_timeout_s = options_.header_timeout_s;
  g.stall_timeout_s = options_.write_timeout_s;
  g.max_connections = options_.max_connections;
  g.max_unread_per_client = options_.max_incomplete_per_client;
  g.max_buffered_bytes = std::max<uint64_t>(256u << 20, 4 * options_.max_body_bytes);
  g.tls_cert_file = options_.tls_cert_file;
  g.tls_key_file = options_.tls_key_file;
  const int inner = http_->bind_to_any_port("127.0.0.1");
  if (inner <= 0) return UnavailableError("cannot listen on 127.0.0.1 (any port)");
  g.inner_port = inner;
  StatusOr<std::unique_ptr<FrontGate>> gate = FrontGate::Bind(std::move(g));
  if (!gate.ok()) return gate.status();
  gate_ = std::move(*gate);
  port_ = gate_->port();
  return OkStatus();
}

Status ApiServer::Bind() {
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    return InvalidArgumentError("TLS needs both a certificate and a key file");
  }
  // Plain HTTP inside: TLS, when configured, ends at the front gate.
  http_ = std::make_unique<httplib::Server>();
  httplib::Server& svr = *http_;
  svr.set_socket_options(SetReuseAddressOnly);
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

  svr.set_pre_routing_handler(
      [this, &o, &st, cors](const httplib::Request& req, httplib::Response& res) {
        if (gate_ && !(req.remote_addr == "127.0.0.1" && gate_->IsGatePort(req.remote_port))) {
          SendError(res, Error(403, "permission_error",
                               "connect to the API's public address, not its internal port",
                               "not_through_gate"));
          return httplib::Server::HandlerResponse::Handled;
        }
        cors(req, res);
        if (req.method == "OPTIONS") {
          res.status = o.cors_origins.empty() ? 405 : 204;
          return httplib::Server::HandlerResponse::Handled;
        }
        if (std::optional<ApiError> refused = GuardRequest(req, {.keyless = o.api_keys.empty()})) {
          SendError(res, *refused);
          st.Count(RouteLabel(req.path), refused->status);
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
          st.Count(RouteLabel(req.path), 401);
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

  auto unready = [&st](httplib::Response& res) { return AnswerUnready(st, res); };

  svr.Get("/v1/models", [&st, unready](const httplib::Request&, httplib::Response& res) {
    if (unready(res)) return;
    json model = {{"id", st.model_id},
                  {"object", "model"},
                  {"created", 0},
                  {"owned_by", "ellm"},
                  {"context_length", st.n_ctx}};
    res.set_content(Dump({{"object", "list"}, {"data", json::array({model})}}), "application/json");
    st.Count("/v1/models", 200);
  });

  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsText(), "text/plain; version=0.0.4");
  });

  RouteJobs(svr, st);
  svr.Post("/v1/chat/completions", [&st, &o](const httplib::Request& req, httplib::Response& res) {
    RunCompletion(st, o, req, res, true);
  });
  svr.Post("/v1/completions", [&st, &o](const httplib::Request& req, httplib::Response& res) {
    RunCompletion(st, o, req, res, false);
  });

  return BindGate();
}

}  // namespace ellm::server
