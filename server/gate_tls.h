// TLS for the front gate's public socket (front_gate.h): OpenSSL on the
// gate's non-blocking sockets, so a client that never finishes its
// handshake is just another half-read connection under the header
// deadline and the per-client caps, as a plain one is. Used only by
// front_gate.cc.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "ellm/base/status.h"

struct ssl_ctx_st;
struct ssl_st;

namespace ellm::server {

class GateTls {
 public:
  // The server's certificate chain and key (PEM files). InvalidArgument
  // naming them if either is unreadable, not PEM, or they do not match.
  static StatusOr<std::unique_ptr<GateTls>> Load(const std::string& cert_file,
                                                 const std::string& key_file);
  ~GateTls();
  GateTls(const GateTls&) = delete;
  GateTls& operator=(const GateTls&) = delete;

  // A server-side session on accepted socket `fd`; nullptr if OpenSSL
  // cannot make one (the connection is then closed).
  ssl_st* NewSession(int fd) const;

 private:
  explicit GateTls(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// What a step of a session's handshake came to.
enum class TlsStep { kDone, kWantRead, kWantWrite, kFailed };
TlsStep TlsHandshake(ssl_st* ssl);
// recv() and send() over a session, with their conventions: n > 0 bytes;
// 0 when the peer closed; -1 with errno EAGAIN when the socket must become
// readable or writable first (`*want_write` says which), else -1 with
// errno ECONNRESET.
ssize_t TlsRecv(ssl_st* ssl, char* buf, size_t len, bool* want_write);
ssize_t TlsSend(ssl_st* ssl, const char* buf, size_t len, bool* want_write);
// Sends close_notify once the handshake is done (best effort, never
// blocks): the reply's end, before the socket's write side is shut.
void TlsShutdown(ssl_st* ssl);
// Sends close_notify (best effort, never blocks) and frees the session.
void TlsClose(ssl_st* ssl);

}  // namespace ellm::server
