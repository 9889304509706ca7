// See gate_tls.h.
#include "gate_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace ellm::server {
namespace {

// The error queue is per thread: what one connection left must not be
// read as another's.
std::string LastSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

ssize_t Mapped(ssl_st* ssl, int n, bool* want_write) {
  if (n > 0) return n;
  const int err = SSL_get_error(ssl, n);
  ERR_clear_error();
  *want_write = err == SSL_ERROR_WANT_WRITE;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  errno = ECONNRESET;
  return -1;
}

}  // namespace

StatusOr<std::unique_ptr<GateTls>> GateTls::Load(const std::string& cert_file,
                                                 const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return InternalError("TLS: " + LastSslError());
  std::unique_ptr<GateTls> tls(new GateTls(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // The gate retries a write from a buffer that may have moved or grown.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    const std::string why = LastSslError();
    return InvalidArgumentError("TLS: cannot use certificate '" + cert_file + "' with key '" +
                                key_file + "' (unreadable, not PEM, or they do not match: " + why +
                                ")");
  }
  return tls;
}

GateTls::~GateTls() { SSL_CTX_free(ctx_); }

ssl_st* GateTls::NewSession(int fd) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

TlsStep TlsHandshake(ssl_st* ssl) {
  const int r = SSL_do_handshake(ssl);
  if (r == 1) return TlsStep::kDone;
  const int err = SSL_get_error(ssl, r);
  ERR_clear_error();
  if (err == SSL_ERROR_WANT_READ) return TlsStep::kWantRead;
  if (err == SSL_ERROR_WANT_WRITE) return TlsStep::kWantWrite;
  return TlsStep::kFailed;
}

ssize_t TlsRecv(ssl_st* ssl, char* buf, size_t len, bool* want_write) {
  return Mapped(ssl, SSL_read(ssl, buf, static_cast<int>(std::min<size_t>(len, INT_MAX))),
                want_write);
}

ssize_t TlsSend(ssl_st* ssl, const char* buf, size_t len, bool* want_write) {
  return Mapped(ssl, SSL_write(ssl, buf, static_cast<int>(std::min<size_t>(len, INT_MAX))),
                want_write);
}

void TlsShutdown(ssl_st* ssl) {
  if (ssl != nullptr && SSL_is_init_finished(ssl)) (void)SSL_shutdown(ssl);
  ERR_clear_error();
}

void TlsClose(ssl_st* ssl) {
  if (ssl == nullptr) return;
  if (SSL_is_init_finished(ssl)) (void)SSL_shutdown(ssl);
  ERR_clear_error();
  SSL_free(ssl);
}

}  // namespace ellm::server
