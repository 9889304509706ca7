// A tiny HTTP/1.0 client for tests of the daemon's local endpoints.
#pragma once

#include <string>

namespace ellm::testing {

struct HttpResponse {
  int status = 0;  // 0: no response (connect, send or parse failed)
  std::string body;
};

// One request to 127.0.0.1:port over a plain socket; reads until the server
// closes the connection. Times out after 5 s.
HttpResponse HttpRequest(int port, const std::string& method, const std::string& path);

// `request` (request line, headers and any body, as is) sent to
// 127.0.0.1:port over a plain socket; the same reading and timeout.
HttpResponse HttpSendRaw(int port, const std::string& request);

// A socket connected to 127.0.0.1:port, its receive buffer set to `rcvbuf`
// bytes when > 0 (before connecting, so the window stays small) and its
// reads timing out after 10 s; -1 if the connection fails.
int ConnectLoopback(int port, int rcvbuf = 0);

}  // namespace ellm::testing
