// The connection a request arrived on, watched for the client going away.
// cpp-httplib 0.11 gives a handler no handle on its connection, and a
// non-streamed reply writes nothing until it is done, so a client that
// timed out would otherwise leave its generation running to the end. The
// socket is found by the request's addresses (or its TLS session) and only
// ever polled, never read or written: the library keeps owning it.
#pragma once

#include <httplib.h>

namespace ellm::server {

class ClientConnection {
 public:
  // Finds the request's socket: the TLS session's, else the open socket
  // whose local and peer addresses are the request's. Not found (-1): Gone()
  // is always false.
  explicit ClientConnection(const httplib::Request& req);
  // True once the peer has closed its side or the connection failed
  // (POLLRDHUP, POLLHUP, POLLERR); one poll(2), no blocking.
  bool Gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace ellm::server
