// What every request to the HTTP API must show before authentication and
// before its body is read (ApiServer's pre-routing handler): the checks
// that depend on no route. Issue 53.
//   - A body is framed by Content-Length, never chunked: cpp-httplib 0.11
//     applies the body limit only to a Content-Length, so a chunked body was
//     read whole into memory (300 MB) before any answer. 411 otherwise.
//   - Without API keys (loopback only), browsers are the threat: a page the
//     user visits may POST to 127.0.0.1, or rebind its own name to it. So
//     the Host must be a loopback name (403 otherwise: DNS rebinding), and
//     a POST body must be application/json (415 otherwise: a browser sends
//     that cross-site only after a CORS preflight, which ellm answers only
//     for configured origins). Multipart job uploads then need API keys.
#pragma once

#include <optional>
#include <string_view>

#include "ellm/server/openai.h"

namespace httplib {
struct Request;
}

namespace ellm::server {

struct RequestGuardOptions {
  bool keyless = false;  // no API keys are set
};

// The error to answer `req` with, or nullopt when it may go on.
std::optional<ApiError> GuardRequest(const httplib::Request& req, const RequestGuardOptions& o);

// Whether `host` (a Host header: "name", "name:port", "[v6]:port") names
// this machine's loopback: localhost, 127.0.0.0/8 or ::1.
bool IsLoopbackHost(std::string_view host);

}  // namespace ellm::server
