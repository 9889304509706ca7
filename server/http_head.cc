// Request heads checked and rewritten before the inner server (http_head.h).
#include "ellm/server/http_head.h"
#include "ellm/base/ascii.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

namespace ellm::server {
namespace {

// RFC 9110 token characters (method and field names).
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The methods passed on to the inner server (its routes answer 404 or 405
// for the ones they do not serve); any other is a 501 from the gate.
constexpr std::string_view kMethods[] = {"GET",    "HEAD",  "POST",   "PUT",
                                         "DELETE", "PATCH", "OPTIONS"};

bool KnownMethod(std::string_view m) {
  return std::find(std::begin(kMethods), std::end(kMethods), m) != std::end(kMethods);
}

HeadResult Refuse(int status, std::string code, std::string message) {
  HeadResult r;
  r.refusal = {status, std::move(code), std::move(message)};
  return r;
}

// The head's lines without their ends; false on a bare CR or a NUL.
bool SplitLines(std::string_view head, std::vector<std::string_view>* lines) {
  size_t start = 0;
  while (start < head.size()) {
    size_t end = head.find('\n', start);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos || line.find('\0') != std::string_view::npos) {
      return false;
    }
    lines->push_back(line);
    start = end + 1;
  }
  while (!lines->empty() && lines->back().empty()) lines->pop_back();
  return true;
}

// "METHOD SP TARGET SP HTTP/1.x".
HeadResult ParseRequestLine(std::string_view line, RequestHead* head) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Refuse(400, "bad_request", "malformed request line: expected METHOD TARGET HTTP/1.1");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Refuse(400, "bad_request", "malformed request method");
  if (!KnownMethod(method)) {
    return Refuse(501, "not_implemented",
                  "the method " + std::string(method.substr(0, 16)) +
                      (method.size() > 16 ? "..." : "") + " is not served");
  }
  if (target.empty() || std::any_of(target.begin(), target.end(),
                                    [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
    return Refuse(400, "bad_request", "malformed request target");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/") {
    return Refuse(400, "bad_request", "malformed HTTP version");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return Refuse(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served");
  }
  head->method = method;
  head->target = target;
  head->http11 = version == "HTTP/1.1";
  head->forwarded.append(line).append("\r\n");
  HeadResult ok;
  ok.ok = true;
  return ok;
}

// One "Name: value" field: checked, and kept in the forwarded head unless
// it is hop-by-hop.
HeadResult ParseField(std::string_view line, const HeadLimits& limits, RequestHead* head,
                      bool* seen_length, int* hosts) {
  if (line.empty()) return Refuse(400, "bad_request", "an empty line inside the request head");
  if (line.front() == ' ' || line.front() == '\t') {
    return Refuse(400, "bad_request", "folded header lines are not accepted");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
    return Refuse(400, "bad_request", "malformed header line");
  }
  const std::string name = AsciiLower(line.substr(0, colon));
  const std::string_view value = Trim(line.substr(colon + 1));
  if (name == "host") ++*hosts;
  if (name == "transfer-encoding") {
    return Refuse(411, "length_required",
                  "send the request body with a Content-Length header: chunked transfer "
                  "encoding is not accepted");
  }
  if (name == "content-length") {
    if (value.empty() || value.size() > 19 ||
        value.find_first_not_of("0123456789") != std::string_view::npos) {
      return Refuse(400, "bad_request", "Content-Length must be a decimal number");
    }
    const uint64_t n = std::stoull(std::string(value));
    if (*seen_length && n != head->content_length) {
      return Refuse(400, "bad_request", "two different Content-Length headers");
    }
    if (n > limits.max_body_bytes) {
      return Refuse(413, "request_too_large",
                    "the request body is too large (Content-Length " + std::to_string(n) +
                        " over the limit of " + std::to_string(limits.max_body_bytes) + " bytes)");
    }
    *seen_length = true;
    head->content_length = n;
  }
  if (name == "expect") {
    if (AsciiLower(value) != "100-continue") {
      return Refuse(417, "expectation_failed", "only the expectation 100-continue is served");
    }
    head->expect_continue = true;
    return HeadResult{.ok = true};
  }
  if (name == "connection" || name == "keep-alive" || name == "te" || name == "upgrade" ||
      name == "proxy-connection") {
    return HeadResult{.ok = true};
  }
  head->forwarded.append(line).append("\r\n");
  return HeadResult{.ok = true};
}

const char* Reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

}  // namespace

size_t HeadSize(std::string_view buf, size_t limit) {
  const std::string_view window = buf.substr(0, std::min(buf.size(), limit + 4));
  for (size_t i = 0; i < window.size(); ++i) {
    if (window[i] != '\n') continue;
    if (i >= 1 && window[i - 1] == '\n') return i + 1;
    if (i >= 2 && window[i - 1] == '\r' && window[i - 2] == '\n') return i + 1;
  }
  return 0;
}

bool CouldBeRequest(std::string_view buf) {
  const size_t end = std::min(buf.find_first_of(" \r\n"), buf.size());
  const std::string_view method = buf.substr(0, end);
  if (end < buf.size()) return KnownMethod(method);
  return std::any_of(std::begin(kMethods), std::end(kMethods),
                     [&](std::string_view m) { return m.substr(0, method.size()) == method; });
}

HeadResult ParseRequestHead(std::string_view head, const HeadLimits& limits) {
  if (head.size() > limits.max_bytes) {
    return Refuse(
        431, "headers_too_large",
        "the request line and headers are over " + std::to_string(limits.max_bytes) + " bytes");
  }
  std::vector<std::string_view> lines;
  if (!SplitLines(head, &lines)) {
    return Refuse(400, "bad_request", "a bare CR or a NUL byte in the request head");
  }
  if (lines.empty()) return Refuse(400, "bad_request", "empty request");
  if (lines.size() - 1 > limits.max_fields) {
    return Refuse(431, "headers_too_large",
                  "more than " + std::to_string(limits.max_fields) + " header fields");
  }
  HeadResult result;
  result.head.forwarded.reserve(head.size() + 24);
  HeadResult line = ParseRequestLine(lines[0], &result.head);
  if (!line.ok) return line;
  bool seen_length = false;
  int hosts = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    HeadResult field = ParseField(lines[i], limits, &result.head, &seen_length, &hosts);
    if (!field.ok) return field;
  }
  // RFC 9112 3.2: an HTTP/1.1 request carries exactly one Host field.
  if (hosts > 1 || (hosts == 0 && result.head.http11)) {
    return Refuse(
        400, "bad_request",
        hosts == 0 ? "an HTTP/1.1 request without a Host header" : "more than one Host header");
  }
  result.head.forwarded.append("Connection: close\r\n\r\n");
  result.ok = true;
  return result;
}

std::string RefusalResponse(const HeadRefusal& refusal) {
  const nlohmann::json body = {
      {"error",
       {{"message", refusal.message},
        {"type", refusal.status >= 500 ? "server_error" : "invalid_request_error"},
        {"param", nullptr},
        {"code", refusal.code}}}};
  const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out =
      "HTTP/1.1 " + std::to_string(refusal.status) + " " + Reason(refusal.status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
      "\r\nConnection: close\r\n";
  if (refusal.status == 503 || refusal.status == 429) out += "Retry-After: 1\r\n";
  return out + "\r\n" + text;
}

}  // namespace ellm::server
