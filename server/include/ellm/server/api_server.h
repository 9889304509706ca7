// The OpenAI-compatible HTTP API (cpp-httplib, with TLS through OpenSSL):
//   POST /v1/chat/completions, POST /v1/completions   (stream: Server-Sent Events)
//   GET  /v1/models, GET /health, GET /metrics        (Prometheus text)
//   POST /v1/jobs (JSON or multipart upload; Idempotency-Key = job id),
//   GET  /v1/jobs/{id}, GET /v1/jobs?status=&limit=   (document jobs)
// Requests share one loaded Engine with any batch work on it: replies take
// interactive turns of engine.gate() (one for a prompt's prefill, one per
// decoding step), so a document job running on the same engine steps aside
// at its next prefill slice or token. Replies run in a small pool of
// sessions (KV caches) whose decoding steps go through one DecodeBatcher: N
// streams advance by a token each in one pass over the weights. A follow-up
// whose prompt continues a session's tokens reuses them. Past `max_queue` waiting
// requests the answer is 429 with Retry-After; a streaming client that
// disconnects ends its generation at the next token.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/engine.h"
#include "ellm/server/job_service.h"

namespace httplib {
class Server;
}

namespace ellm::server {

class FrontGate;

struct ApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (port() tells which)
  // Bearer keys a request must present (Authorization: Bearer <key>);
  // empty: no authentication. /health never needs one.
  std::vector<std::string> api_keys;
  // TLS: both files (PEM), or neither for plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
  size_t max_body_bytes = 64u << 20;
  int read_timeout_s = 30;
  // A reply (streamed or not) whose client has read nothing for this long
  // ends, and its session is freed.
  int write_timeout_s = 30;
  // Plain HTTP goes through the front gate (server/front_gate.h): a
  // request's line and headers must arrive within header_timeout_s; at most
  // max_connections at once, and max_incomplete_per_client from one
  // address whose request has not fully arrived (past either, the oldest
  // such connection is dropped).
  int header_timeout_s = 10;
  int max_connections = 1024;
  int max_incomplete_per_client = 32;
  // Replies evaluated side by side, each in its own KV cache, their tokens
  // decoded together (one pass over the weights per token for all).
  int sessions = 8;
  int max_queue = 16;  // requests waiting for a session before 429
  // Choices one API key may have running or queued at once (a request with
  // `n` counts n); past it 429. 0: sessions - 1 when there are two keys or
  // more (no key can take every session), no limit with one key or none.
  int max_sessions_per_key = 0;
  int64_t n_ctx = 8192;  // each session's context (capped at the model's)
  // Origins allowed by CORS (Access-Control-Allow-Origin); empty: no CORS
  // headers at all. "*" allows any.
  std::vector<std::string> cors_origins;

  // Ranges, TLS files both or neither, keys required off loopback.
  Status Validate() const;
};

// "HOST:PORT" ("[::1]:PORT" for IPv6) into host and port (0..65535).
Status ParseListen(const std::string& listen, std::string* host, int* port);

// Reads API keys from a file: one per line, blank lines and lines starting
// with '#' ignored. Refuses a file others may read (mode & 007), naming
// the file but never a key. "credential:NAME" reads the systemd credential
// NAME ($CREDENTIALS_DIRECTORY/NAME, from the unit's LoadCredential=).
StatusOr<std::vector<std::string>> ReadApiKeysFile(const std::string& path);

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds host:port (errors name the address, or the TLS file at fault).
  Status Bind();
  int port() const { return port_; }
  // "http://127.0.0.1:8080" (https with TLS).
  std::string address() const;

  // The model to serve, once loaded; until then every endpoint but /health
  // answers 503 and /health says "loading". `engine` must outlive the
  // server. `model_id` is what /v1/models lists and requests may name.
  Status SetModel(Engine* engine, const std::string& model_id, const std::string& fingerprint);
  // Document jobs (/v1/jobs); without a service those routes answer 404.
  // `jobs` must outlive the server (or be unset with nullptr first).
  void SetJobs(JobService* jobs);
  // What GET /metrics answers (Prometheus text, the ellm_http_* families),
  // for a front door that serves its own /metrics (ellmd).
  std::string MetricsText() const;

  // Serves until Stop(); returns false if it could not serve.
  bool Run();
  void Stop();

 private:
  struct State;
  Status BindGate();
  ApiServerOptions options_;
  int port_ = 0;
  std::unique_ptr<State> state_;
  std::unique_ptr<FrontGate> gate_;  // null with TLS
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace ellm::server
