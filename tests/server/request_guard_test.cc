// Issue 53: what the HTTP API checks before authentication and before it
// reads a body (server/request_guard.h), alone and in a real ApiServer (no
// model: the guard answers before any route).
#include "ellm/server/request_guard.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "ellm/server/api_server.h"
#include "http_get.h"

namespace ellm::server {
namespace {

TEST(IsLoopbackHost, AcceptsOnlyLoopbackNames) {
  for (const char* host : {"localhost", "LOCALHOST:8080", "localhost.", "127.0.0.1",
                           "127.0.0.1:18080", "127.1.2.3", "[::1]", "[::1]:8080"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host :
       {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example",
        "10.0.0.1", "[::2]:80", "[::1", "", "127.0.0", "128.0.0.1"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

httplib::Request MakeRequest(const std::string& method, httplib::Headers headers) {
  httplib::Request req;
  req.method = method;
  req.path = "/v1/chat/completions";
  req.headers = std::move(headers);
  return req;
}

TEST(GuardRequest, ChunkedBodiesAreRefusedWithOrWithoutKeys) {
  for (bool keyless : {false, true}) {
    const auto e = GuardRequest(MakeRequest("POST", {{"Transfer-Encoding", "chunked"},
                                                     {"Host", "localhost"},
                                                     {"Content-Type", "application/json"}}),
                                {.keyless = keyless});
    ASSERT_TRUE(e.has_value()) << keyless;
    EXPECT_EQ(e->status, 411);
    EXPECT_EQ(e->code, "length_required");
    EXPECT_NE(e->message.find("Content-Length"), std::string::npos) << e->message;
  }
  EXPECT_FALSE(GuardRequest(MakeRequest("POST", {{"Transfer-Encoding", "identity"},
                                                 {"Content-Type", "application/json"}}),
                            {.keyless = true}));
}

TEST(GuardRequest, KeylessNeedsALoopbackHost) {
  const auto e =
      GuardRequest(MakeRequest("GET", {{"Host", "rebound.evil.example:18080"}}), {.keyless = true});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 403);
  EXPECT_EQ(e->code, "host_not_allowed");
  EXPECT_NE(e->message.find("rebound.evil.example"), std::string::npos) << e->message;
  // With keys the key is the check; no Host at all (HTTP/1.0) is no browser.
  EXPECT_FALSE(GuardRequest(MakeRequest("GET", {{"Host", "api.example"}}), {.keyless = false}));
  EXPECT_FALSE(GuardRequest(MakeRequest("GET", {}), {.keyless = true}));
  EXPECT_FALSE(GuardRequest(MakeRequest("GET", {{"Host", "127.0.0.1:8080"}}), {.keyless = true}));
}

TEST(GuardRequest, KeylessPostsMustBeJson) {
  for (const char* type :
       {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
    httplib::Headers headers = {{"Host", "localhost"}};
    if (*type != '\0') headers.emplace("Content-Type", type);
    const auto e = GuardRequest(MakeRequest("POST", headers), {.keyless = true});
    ASSERT_TRUE(e.has_value()) << type;
    EXPECT_EQ(e->status, 415) << type;
    EXPECT_EQ(e->code, "unsupported_media_type");
  }
  EXPECT_FALSE(GuardRequest(
      MakeRequest("POST",
                  {{"Host", "localhost"}, {"Content-Type", "Application/JSON; charset=utf-8"}}),
      {.keyless = true}));
  EXPECT_FALSE(
      GuardRequest(MakeRequest("POST", {{"Content-Type", "multipart/form-data; boundary=x"}}),
                   {.keyless = false}));
}

// A keyless ApiServer on loopback, as `ellm serve` without an API keys file.
class KeylessApiServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerOptions o;
    o.port = 0;
    o.sessions = 1;
    o.max_queue = 0;
    o.max_body_bytes = 1 << 20;
    server_ = std::make_unique<ApiServer>(o);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { server_->Run(); });
    for (int i = 0; i < 100 && Send("GET /health", "Host: 127.0.0.1\r\n").status == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void TearDown() override {
    server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  // `line` ("POST /v1/jobs") with `headers` (each ending in \r\n) and `body`.
  ellm::testing::HttpResponse Send(const std::string& line, const std::string& headers,
                                   const std::string& body = "") {
    return ellm::testing::HttpSendRaw(
        server_->port(), line + " HTTP/1.1\r\nConnection: close\r\n" + headers + "\r\n" + body);
  }
  std::unique_ptr<ApiServer> server_;
  std::thread thread_;
};

TEST_F(KeylessApiServer, RefusesWhatABrowserOrAnEndlessBodyCouldSend) {
  // Issue 53: a chunked body was read whole (300 MB) before the 400. Here
  // the first chunk announces 256 MB and the answer comes before it.
  const auto chunked = Send("POST /v1/chat/completions",
                            "Host: localhost\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n",
                            "10000000\r\n{\"messages\":[");
  EXPECT_EQ(chunked.status, 411) << chunked.body;
  EXPECT_NE(chunked.body.find("length_required"), std::string::npos) << chunked.body;

  const auto rebound = Send("GET /v1/models", "Host: rebound.evil.example\r\n");
  EXPECT_EQ(rebound.status, 403) << rebound.body;
  EXPECT_NE(rebound.body.find("host_not_allowed"), std::string::npos) << rebound.body;

  const std::string form = "{\"messages\":[]}";
  const auto cross_site = Send("POST /v1/chat/completions",
                               "Host: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: " +
                                   std::to_string(form.size()) + "\r\n",
                               form);
  EXPECT_EQ(cross_site.status, 415) << cross_site.body;

  // The same request as JSON from a loopback name passes the guard: the
  // server, still without a model, answers that it is loading.
  const auto json = Send("POST /v1/chat/completions",
                         "Host: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(form.size()) + "\r\n",
                         form);
  EXPECT_EQ(json.status, 503) << json.body;
  EXPECT_EQ(Send("GET /health", "Host: 127.0.0.1\r\n").status, 503);
  const std::string metrics = server_->MetricsText();
  // The chunked body was refused by the front gate, before any route.
  EXPECT_NE(metrics.find("ellm_http_connections_total{outcome=\"refused\"} 1"), std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace ellm::server
