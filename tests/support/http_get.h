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

}  // namespace ellm::testing
