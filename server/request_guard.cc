// Route-independent checks of a request before authentication
// (request_guard.h).
#include "ellm/server/request_guard.h"
#include "ellm/base/ascii.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace ellm::server {
namespace {

// "application/json; charset=utf-8" -> "application/json".
std::string MediaType(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  std::string_view type = content_type.substr(0, semi);
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) {
    type.remove_suffix(1);
  }
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.front()))) {
    type.remove_prefix(1);
  }
  return AsciiLower(type);
}

bool IsDottedLoopback(std::string_view name) {
  if (name.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : name) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  std::string name;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = AsciiLower(host.substr(1, close - 1));
    return name == "::1";
  }
  name = AsciiLower(host.substr(0, host.find(':')));
  if (!name.empty() && name.back() == '.') name.pop_back();  // "localhost."
  return name == "localhost" || IsDottedLoopback(name);
}

std::optional<ApiError> GuardRequest(const httplib::Request& req, const RequestGuardOptions& o) {
  if (req.has_header("Transfer-Encoding") &&
      AsciiLower(req.get_header_value("Transfer-Encoding")) != "identity") {
    ApiError e = InvalidRequest(
        "send the request body with a Content-Length header: chunked transfer encoding is not "
        "accepted",
        "", "length_required");
    e.status = 411;
    return e;
  }
  if (!o.keyless) return std::nullopt;
  if (req.has_header("Host") && !IsLoopbackHost(req.get_header_value("Host"))) {
    ApiError e = InvalidRequest("Host '" + req.get_header_value("Host") +
                                    "' is not a loopback name: without API keys, ellm serve "
                                    "answers only requests addressed to localhost, 127.0.0.1 "
                                    "or [::1] (set API keys to serve other names)",
                                "", "host_not_allowed");
    e.status = 403;
    e.type = "permission_error";
    return e;
  }
  if (req.method == "POST" &&
      MediaType(req.get_header_value("Content-Type")) != "application/json") {
    const std::string got = req.get_header_value("Content-Type");
    ApiError e = InvalidRequest(
        "without API keys, a POST body must be Content-Type: application/json (got " +
            (got.empty() ? std::string("none") : "'" + got + "'") +
            "): other types can be sent by any web page; set API keys to upload files",
        "", "unsupported_media_type");
    e.status = 415;
    return e;
  }
  return std::nullopt;
}

}  // namespace ellm::server
