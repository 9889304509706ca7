// The head of an HTTP/1.x request (request line and header fields), read
// by the front gate (front_gate.h) before cpp-httplib sees the request:
// its size, field count and body framing checked, and rewritten for the
// inner server. Pure functions over bytes, so the fuzz target
// (tests/fuzz/http_head_fuzz.cc) drives exactly what the gate runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ellm::server {

struct HeadLimits {
  size_t max_bytes = 16384;  // request line and fields together
  size_t max_fields = 100;
  uint64_t max_body_bytes = 64u << 20;
};

// A request the gate answers itself: status, OpenAI error code, message.
struct HeadRefusal {
  int status = 0;
  std::string code;
  std::string message;
};

struct RequestHead {
  std::string method;
  std::string target;
  bool http11 = false;  // HTTP/1.1 (else 1.0)
  uint64_t content_length = 0;
  bool expect_continue = false;  // the client waits for "100 Continue"
  // The head as the inner server gets it: the same request line and
  // fields, CRLF line ends, hop-by-hop fields (Connection, Keep-Alive,
  // Expect, TE, Upgrade, Proxy-Connection) dropped and "Connection: close"
  // added, so the inner server ends its connection with the reply.
  std::string forwarded;
};

struct HeadResult {
  bool ok = false;
  RequestHead head;     // when ok
  HeadRefusal refusal;  // when not
};

// The size of the head at the start of `buf` including its blank line
// ("\r\n\r\n", or "\n\n" from a client that ends lines with LF alone);
// 0 while it is not complete. Looks at no more than limit + 4 bytes.
size_t HeadSize(std::string_view buf, size_t limit);

// Whether the bytes a connection has sent so far can begin a request this
// server serves (a known method, or the start of one): false for a TLS
// handshake, binary noise or a line of text, which the gate then refuses at
// once instead of waiting for a head that never comes.
bool CouldBeRequest(std::string_view buf);

// Parses a complete head (HeadSize bytes). Refused, with the status the
// gate answers: 400 (malformed, or an HTTP/1.1 request without exactly one
// Host), 501 (a method other than GET, HEAD, POST, PUT, DELETE, PATCH,
// OPTIONS), 505 (not HTTP/1.0 or 1.1), 431 (too
// big, too many fields), 411 (a Transfer-Encoding: bodies must come with
// a Content-Length), 413 (Content-Length over the limit), 417 (an
// expectation other than 100-continue).
HeadResult ParseRequestHead(std::string_view head, const HeadLimits& limits);

// A complete response the gate sends itself: status line, JSON error body
// in the OpenAI form ({"error": {"message", "type", "code"}}), "Connection:
// close".
std::string RefusalResponse(const HeadRefusal& refusal);

}  // namespace ellm::server
