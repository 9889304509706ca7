// The front gate: the API's public socket, owned by one epoll thread that
// reads each request whole — head and body, within a deadline and its
// limits — before cpp-httplib (on a private loopback port) sees it, then
// relays the reply. cpp-httplib 0.11 gives each connection a pool thread
// from accept on, with no header deadline, size or count limit; behind the
// gate its threads only ever hold complete requests, so slow or silent
// clients cannot take them, and /health answers under any number of them.
//
// Limits: a header deadline and size/field caps (http_head.h), a body that
// must arrive at a minimum rate, connections in total (bounded by the
// process's file limit) and half-read ones per client address — past
// either cap the oldest half-read connection is dropped, so a flood of
// silent connections cannot keep a quick client out — bodies held at once,
// and a client that stops reading its reply is dropped after the stall
// timeout (so its stream ends and its session is freed).
//
// TLS (a certificate and key given): the gate terminates it on the same
// loop, so a client stuck in its handshake is a half-read connection under
// the same deadline and caps; the inner server sees plain HTTP.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ellm/base/status.h"
#include "ellm/server/http_head.h"

namespace ellm::server {

struct FrontGateOptions {
  std::string host = "127.0.0.1";
  int port = 0;        // 0: any free port
  int inner_port = 0;  // cpp-httplib on 127.0.0.1
  HeadLimits head;
  double header_timeout_s = 10;
  // A body's deadline: header_timeout_s after its head, plus its length
  // at this many bytes per second.
  uint64_t body_min_bytes_per_s = 64 << 10;
  // A reply the client has stopped reading for this long ends.
  double stall_timeout_s = 30;
  int max_connections = 1024;
  int max_unread_per_client = 32;            // connections whose request is not yet whole
  uint64_t max_buffered_bytes = 256u << 20;  // request bodies held at once
  // Both set: serve HTTPS (PEM files: the certificate chain, the key).
  std::string tls_cert_file, tls_key_file;
};

class GateTls;

class FrontGate {
 public:
  struct Stats {
    uint64_t accepted = 0;
    uint64_t forwarded = 0;
    // Connections ended by the gate, by reason.
    uint64_t header_timeout = 0;  // head or body not whole in time (408)
    uint64_t refused_head = 0;    // malformed, too big, chunked (4xx)
    uint64_t evicted = 0;         // oldest half-read dropped at a cap
    uint64_t over_capacity = 0;   // 503: every connection busy with a reply
    uint64_t stalled = 0;         // client stopped reading its reply
    int64_t open = 0;
  };

  // Binds host:port (the file limit raised to its hard maximum). With TLS,
  // InvalidArgument if the certificate or key cannot be used, and SIGPIPE
  // is ignored from then on (OpenSSL writes without MSG_NOSIGNAL).
  static StatusOr<std::unique_ptr<FrontGate>> Bind(FrontGateOptions options);
  ~FrontGate();
  FrontGate(const FrontGate&) = delete;
  FrontGate& operator=(const FrontGate&) = delete;

  int port() const { return port_; }
  // Serves until Stop().
  void Run();
  void Stop();
  Stats stats() const;
  // Whether a connection from 127.0.0.1:`port` is one of the gate's own
  // to the inner server (anything else reaching it went around the gate).
  bool IsGatePort(int port) const;

 private:
  struct Loop;
  explicit FrontGate(FrontGateOptions options);
  void MarkPort(int port, bool on);

  FrontGateOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::array<std::atomic<uint64_t>, 1024> gate_ports_{};
  std::unique_ptr<GateTls> tls_;
  std::unique_ptr<Loop> loop_;
};

}  // namespace ellm::server
