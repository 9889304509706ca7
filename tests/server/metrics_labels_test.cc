// Issue 53: the HTTP API's metric labels carry no client text. The route
// labels and the escaping alone, then a real ApiServer (no model: the 401s
// answer before any route) asked for hostile paths.
#include "ellm/server/metrics_labels.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>

#include "ellm/server/api_server.h"
#include "http_get.h"
#include "metrics_text.h"

namespace ellm::server {
namespace {

using ellm::testing::RequestSeries;

TEST(RouteLabel, IsTheRoutePatternOrUnmatched) {
  EXPECT_EQ(RouteLabel("/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(RouteLabel("/v1/completions"), "/v1/completions");
  EXPECT_EQ(RouteLabel("/v1/models"), "/v1/models");
  EXPECT_EQ(RouteLabel("/v1/jobs"), "/v1/jobs");
  EXPECT_EQ(RouteLabel("/v1/jobs/q3-report"), "/v1/jobs/{id}");
  EXPECT_EQ(RouteLabel("/metrics"), "/metrics");
  EXPECT_EQ(RouteLabel("/health"), "/health");
  EXPECT_EQ(RouteLabel("/v1/jobs/"), "unmatched");
  EXPECT_EQ(RouteLabel("/v1/jobs/a/b"), "unmatched");
  EXPECT_EQ(RouteLabel("/v1/chat/completions/"), "unmatched");
  EXPECT_EQ(RouteLabel("/x\"} 1\nellm_injected 1\n#"), "unmatched");
  EXPECT_EQ(RouteLabel(""), "unmatched");
}

TEST(EscapeLabelValue, EscapesWhatTheTextFormatRequires) {
  EXPECT_EQ(EscapeLabelValue("/v1/jobs/{id}"), "/v1/jobs/{id}");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue(""), "");
}

class ApiServerMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerOptions o;
    o.port = 0;
    o.sessions = 1;
    o.max_queue = 0;
    o.api_keys = {"sk-test"};
    server_ = std::make_unique<ApiServer>(o);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { server_->Run(); });
    // Loading (no model): /health answers 503 once the server listens.
    for (int i = 0; i < 100 && Get("/health").status == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void TearDown() override {
    server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  ellm::testing::HttpResponse Get(const std::string& path) {
    return ellm::testing::HttpRequest(server_->port(), "GET", path);
  }
  std::unique_ptr<ApiServer> server_;
  std::thread thread_;
};

TEST_F(ApiServerMetrics, AnUnauthenticatedPathCannotWriteALine) {
  EXPECT_EQ(Get("/x%22%7D%201%0Aellm_injected%201%0A%23").status, 401);
  const std::string text = server_->MetricsText();
  EXPECT_EQ(text.find("ellm_injected"), std::string::npos) << text;
  const std::vector<std::string> series = RequestSeries(text);
  ASSERT_EQ(series.size(), 1u) << text;
  EXPECT_EQ(series[0], "ellm_http_requests_total{endpoint=\"unmatched\",status=\"401\"} 1");
  // Every line is a comment or a sample: nothing a client sent split one.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(line.rfind("# ", 0) == 0 || line.rfind("ellm_http_", 0) == 0) << line;
  }
}

TEST_F(ApiServerMetrics, DistinctUnknownPathsAddNoSeries) {
  EXPECT_EQ(Get("/v1/chat/completions").status, 401);
  EXPECT_EQ(Get("/nothing-here").status, 401);
  const size_t before = RequestSeries(server_->MetricsText()).size();
  EXPECT_EQ(before, 2u);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(Get("/probe-" + std::to_string(i)).status, 401) << i;
  }
  const std::string text = server_->MetricsText();
  EXPECT_EQ(RequestSeries(text).size(), before) << text;
  EXPECT_NE(text.find("ellm_http_requests_total{endpoint=\"unmatched\",status=\"401\"} 1001"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("ellm_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"401\"} 1"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace ellm::server
