// Issue 53: the front gate's request-head parser (server/http_head.h), and
// its fuzz corpus replayed through the fuzz target's promises.
#include "ellm/server/http_head.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_env.h"

namespace ellm::server {
namespace {

HeadResult Parse(const std::string& head, HeadLimits limits = {}) {
  EXPECT_EQ(HeadSize(head, limits.max_bytes), head.size()) << head;
  return ParseRequestHead(head, limits);
}

TEST(HttpHead, FindsTheEndOfTheHeadOnlyOnceItHasArrived) {
  EXPECT_EQ(HeadSize("GET / HTTP/1.1\r\nHost: a\r\n", 100), 0u);
  EXPECT_EQ(HeadSize("GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY", 100), 27u);
  EXPECT_EQ(HeadSize("GET / HTTP/1.1\nHost: a\n\nBODY", 100), 24u);
  // A blank line past the limit is not looked for.
  EXPECT_EQ(HeadSize("GET / HTTP/1.1\r\n" + std::string(200, 'a') + "\r\n\r\n", 100), 0u);
}

TEST(HttpHead, RewritesTheHeadForTheInnerServer) {
  const HeadResult r = Parse(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n"
      "Keep-Alive: timeout=5\r\nContent-Type: application/json\r\nContent-Length: 12\r\n"
      "Expect: 100-continue\r\nUpgrade: h2c\r\n\r\n");
  ASSERT_TRUE(r.ok) << r.refusal.message;
  EXPECT_EQ(r.head.method, "POST");
  EXPECT_EQ(r.head.target, "/v1/chat/completions");
  EXPECT_EQ(r.head.content_length, 12u);
  EXPECT_TRUE(r.head.expect_continue);
  EXPECT_EQ(r.head.forwarded,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
            "application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n");
  const HeadResult lf = Parse("GET /health HTTP/1.0\nHost: x\n\n");
  ASSERT_TRUE(lf.ok);
  EXPECT_EQ(lf.head.forwarded, "GET /health HTTP/1.0\r\nHost: x\r\nConnection: close\r\n\r\n");
}

TEST(HttpHead, RefusesWhatTheInnerServerShouldNeverSee) {
  const struct {
    std::string head;
    int status;
    std::string code;
  } cases[] = {
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "length_required"},
      {"POST / HTTP/1.1\r\ntransfer-encoding: identity, chunked\r\n\r\n", 411, "length_required"},
      {"POST / HTTP/1.1\r\nContent-Length: 70000000\r\n\r\n", 413, "request_too_large"},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, "bad_request"},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "bad_request"},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400, "bad_request"},
      {"POST / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417, "expectation_failed"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "http_version_not_supported"},
      {"GET / HTTP/1.1 extra\r\n\r\n", 400, "bad_request"},
      {"GET /a b HTTP/1.1\r\n\r\n", 400, "bad_request"},
      {"G@T / HTTP/1.1\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, "bad_request"},
      {std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26), 400, "bad_request"},
      {"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400, "bad_request"},  // no Host
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_request"},
      {"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "not_implemented"},
      {std::string(9000, 'G') + " / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "not_implemented"},
      {"get / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "not_implemented"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.head);
    const HeadResult r = ParseRequestHead(c.head, {});
    ASSERT_FALSE(r.ok);
    EXPECT_EQ(r.refusal.status, c.status) << r.refusal.message;
    EXPECT_EQ(r.refusal.code, c.code);
  }
}

// What the gate sees before a head is whole: the start of a known method,
// or it refuses at once instead of waiting out the header deadline.
TEST(HttpHead, TellsARequestFromNoiseByItsFirstBytes) {
  for (const char* start : {"", "G", "GE", "GET", "GET ", "POST /v1/chat", "OPTIONS * HTTP/1.1\r\n",
                            "DELETE /v1/jobs/a HTTP/1.1\r\nHo"}) {
    EXPECT_TRUE(CouldBeRequest(start)) << start;
  }
  for (const std::string& start :
       {std::string("\x16\x03\x01\x02\x00", 5), std::string("\r\nGET"), std::string(" GET"),
        std::string("GETX"), std::string("hello world\n"), std::string("PRI * HTTP/2.0"),
        std::string("GET\t/"), std::string("POSTAL "), std::string(1, '\0')}) {
    EXPECT_FALSE(CouldBeRequest(start)) << start;
  }
  // A head the parser accepts could always be a request.
  EXPECT_TRUE(CouldBeRequest("GET /health HTTP/1.1\r\nHost: a\r\n\r\n"));
}

TEST(HttpHead, SizeAndFieldCountAreBounded) {
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  many += "\r\n";
  HeadResult r = ParseRequestHead(many, {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.refusal.status, 431);
  EXPECT_NE(r.refusal.message.find("100 header fields"), std::string::npos) << r.refusal.message;
  const std::string big = "GET / HTTP/1.1\r\nX: " + std::string(17000, 'a') + "\r\n\r\n";
  r = ParseRequestHead(big, {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.refusal.status, 431);
  EXPECT_NE(r.refusal.message.find("16384 bytes"), std::string::npos);
}

TEST(HttpHead, RefusalsAreOpenAiErrorsThatCloseTheConnection) {
  const std::string text = RefusalResponse({408, "request_timeout", "too \"slow\""});
  EXPECT_EQ(text.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << text;
  EXPECT_NE(text.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(text.find(R"({"error":{"code":"request_timeout","message":"too \"slow\"",)"),
            std::string::npos)
      << text;
  EXPECT_NE(RefusalResponse({503, "server_busy", "x"}).find("Retry-After: 1\r\n"),
            std::string::npos);
}

// What tests/fuzz/http_head_fuzz.cc asserts for every input, here over its
// committed corpus.
TEST(HttpHead, FuzzCorpusKeepsItsPromises) {
  const std::filesystem::path dir =
      std::filesystem::path(ELLM_SOURCE_DIR) / "tests/server/http_head_corpus";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string data = ss.str();
    SCOPED_TRACE(entry.path().filename().string());
    HeadLimits limits;
    limits.max_bytes = 4096;
    limits.max_fields = 20;
    limits.max_body_bytes = 1 << 20;
    const size_t size = HeadSize(data, limits.max_bytes);
    ASSERT_LE(size, std::min(data.size(), limits.max_bytes + 4));
    const HeadResult r =
        ParseRequestHead(std::string_view(data).substr(0, size ? size : data.size()), limits);
    if (r.ok) {
      EXPECT_TRUE(CouldBeRequest(data));
      EXPECT_LE(r.head.content_length, limits.max_body_bytes);
      EXPECT_TRUE(r.head.forwarded.ends_with("Connection: close\r\n\r\n"));
      EXPECT_EQ(HeadSize(r.head.forwarded, 1 << 20), r.head.forwarded.size());
    } else {
      EXPECT_GE(r.refusal.status, 400);
      EXPECT_FALSE(r.refusal.message.empty());
    }
    ++files;
  }
  EXPECT_GE(files, 10);
}

}  // namespace
}  // namespace ellm::server
