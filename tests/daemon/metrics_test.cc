#include "metrics.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "http_get.h"

namespace ellm::daemon {
namespace {

using app::MetricsConfig;
using ellm::testing::HttpResponse;
HttpResponse Request(int port, const std::string& method, const std::string& path) {
  return ellm::testing::HttpRequest(port, method, path);
}

HttpResponse Get(int port, const std::string& path) { return Request(port, "GET", path); }

MetricsConfig LoopbackAnyPort() {
  MetricsConfig config;
  config.enabled = true;
  config.listen = "127.0.0.1:0";
  return config;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Metrics, ServesPrometheusTextWithJobsTokensKvAndLag) {
  auto metrics = Metrics::Start(LoopbackAnyPort());
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  int port = (*metrics)->port();
  ASSERT_GT(port, 0);

  HttpResponse before = Get(port, "/metrics");
  ASSERT_EQ(before.status, 200);
  EXPECT_TRUE(Contains(before.body, "ellm_up 1\n")) << before.body;
  EXPECT_TRUE(Contains(before.body, "# TYPE ellm_kv_bytes gauge")) << before.body;
  // prometheus-cpp leaves out a family with no labelled series yet.
  EXPECT_FALSE(Contains(before.body, "ellm_jobs_total")) << before.body;

  (*metrics)->JobFinished("summarize-report", true, 12.5);
  (*metrics)->JobFinished("summarize-report", false, 0.5);
  (*metrics)->JobFailure(/*transient=*/true);
  (*metrics)->JobFailure(/*transient=*/true);
  (*metrics)->JobFailure(/*transient=*/false);
  (*metrics)->Generation(/*prompt_tokens=*/2000, /*prefill_ms=*/500, /*generated_tokens=*/100,
                         /*decode_ms=*/4000);
  (*metrics)->SetKvBytes(1 << 20, 4096);
  (*metrics)->SetConsumerLag(7);

  HttpResponse after = Get(port, "/metrics");
  ASSERT_EQ(after.status, 200);
  const std::string& body = after.body;
  EXPECT_TRUE(Contains(body, "# TYPE ellm_jobs_total counter")) << body;
  EXPECT_TRUE(
      Contains(body, "ellm_jobs_total{pipeline=\"summarize-report\",status=\"succeeded\"} 1\n"))
      << body;
  EXPECT_TRUE(
      Contains(body, "ellm_jobs_total{pipeline=\"summarize-report\",status=\"failed\"} 1\n"))
      << body;
  EXPECT_TRUE(Contains(body, "ellm_job_failures_total{kind=\"transient\"} 2\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_job_failures_total{kind=\"permanent\"} 1\n")) << body;
  EXPECT_TRUE(Contains(body, "# TYPE ellm_job_duration_seconds histogram")) << body;
  // 12.5 s and 0.5 s: one observation at or below 10 s, two at or below 20 s.
  EXPECT_TRUE(Contains(
      body, "ellm_job_duration_seconds_bucket{pipeline=\"summarize-report\",le=\"1\"} 1\n"))
      << body;
  EXPECT_TRUE(Contains(
      body, "ellm_job_duration_seconds_bucket{pipeline=\"summarize-report\",le=\"10\"} 1\n"))
      << body;
  EXPECT_TRUE(Contains(
      body, "ellm_job_duration_seconds_bucket{pipeline=\"summarize-report\",le=\"20\"} 2\n"))
      << body;
  EXPECT_TRUE(Contains(
      body, "ellm_job_duration_seconds_bucket{pipeline=\"summarize-report\",le=\"3600\"} 2\n"))
      << body;
  EXPECT_TRUE(Contains(
      body, "ellm_job_duration_seconds_bucket{pipeline=\"summarize-report\",le=\"+Inf\"} 2\n"))
      << body;
  EXPECT_TRUE(Contains(body, "ellm_job_duration_seconds_count{pipeline=\"summarize-report\"} 2\n"))
      << body;
  EXPECT_TRUE(Contains(body, "ellm_job_duration_seconds_sum{pipeline=\"summarize-report\"} 13\n"))
      << body;
  EXPECT_TRUE(Contains(body, "ellm_prefill_tokens_per_second 4000\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_decode_tokens_per_second 25\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_prompt_tokens_total 2000\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_generated_tokens_total 100\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_kv_bytes{state=\"resident\"} 1048576\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_kv_bytes{state=\"spilled\"} 4096\n")) << body;
  EXPECT_TRUE(Contains(body, "ellm_consumer_lag_messages 7\n")) << body;
  EXPECT_EQ(body, (*metrics)->TextExposition());
}

TEST(Metrics, GenerationWithoutTimeKeepsTheLastRate) {
  auto metrics = Metrics::Start(MetricsConfig{});
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  (*metrics)->Generation(100, 1000, 10, 1000);
  (*metrics)->Generation(50, 0, 0, 0);
  std::string text = (*metrics)->TextExposition();
  EXPECT_TRUE(Contains(text, "ellm_prefill_tokens_per_second 100\n")) << text;
  EXPECT_TRUE(Contains(text, "ellm_decode_tokens_per_second 10\n")) << text;
  EXPECT_TRUE(Contains(text, "ellm_prompt_tokens_total 150\n")) << text;
}

TEST(Metrics, HealthAndReadinessSayWhyTheyFail) {
  auto metrics = Metrics::Start(LoopbackAnyPort());
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  int port = (*metrics)->port();

  HttpResponse healthy = Get(port, "/healthz");
  EXPECT_EQ(healthy.status, 200);
  EXPECT_EQ(healthy.body, "ok\n");
  HttpResponse starting = Get(port, "/readyz");
  EXPECT_EQ(starting.status, 503);
  EXPECT_EQ(starting.body, "not ready: starting\n");

  (*metrics)->SetReadiness("");
  HttpResponse ready = Get(port, "/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ready\n");
  (*metrics)->SetReadiness("draining");
  HttpResponse draining = Get(port, "/readyz");
  EXPECT_EQ(draining.status, 503);
  EXPECT_EQ(draining.body, "not ready: draining\n");

  (*metrics)->SetHealth("the store cannot be written: database is locked\n(busy)");
  HttpResponse sick = Get(port, "/healthz");
  EXPECT_EQ(sick.status, 503);
  EXPECT_EQ(sick.body, "unhealthy: the store cannot be written: database is locked (busy)\n")
      << "one line";
  (*metrics)->SetHealth("");
  EXPECT_EQ(Get(port, "/healthz").status, 200);
}

TEST(Metrics, CountsRetriesDeadLettersReplacementsAndShowsProgress) {
  auto metrics = Metrics::Start(MetricsConfig{});
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  std::string idle = (*metrics)->TextExposition();
  EXPECT_TRUE(Contains(idle, "ellm_job_retries_total 0\n")) << idle;
  EXPECT_TRUE(Contains(idle, "ellm_dead_letters_total 0\n")) << idle;
  EXPECT_TRUE(Contains(idle, "ellm_client_replacements_total{client=\"consumer\"} 0\n")) << idle;
  EXPECT_TRUE(Contains(idle, "ellm_client_replacements_total{client=\"producer\"} 0\n")) << idle;
  EXPECT_TRUE(Contains(idle, "# TYPE ellm_job_progress_positions gauge")) << idle;
  EXPECT_TRUE(Contains(idle, "ellm_job_progress_positions 0\n")) << idle;
  EXPECT_TRUE(Contains(idle, "ellm_job_progress_target_positions 0\n")) << idle;

  (*metrics)->JobRetried();
  (*metrics)->JobRetried();
  (*metrics)->DeadLettered();
  (*metrics)->ClientReplaced(Metrics::Client::kConsumer);
  (*metrics)->ClientReplaced(Metrics::Client::kProducer);
  (*metrics)->ClientReplaced(Metrics::Client::kProducer);
  (*metrics)->SetJobProgress(12288, 16000);
  std::string busy = (*metrics)->TextExposition();
  EXPECT_TRUE(Contains(busy, "# TYPE ellm_job_retries_total counter")) << busy;
  EXPECT_TRUE(Contains(busy, "ellm_job_retries_total 2\n")) << busy;
  EXPECT_TRUE(Contains(busy, "ellm_dead_letters_total 1\n")) << busy;
  EXPECT_TRUE(Contains(busy, "ellm_client_replacements_total{client=\"consumer\"} 1\n")) << busy;
  EXPECT_TRUE(Contains(busy, "ellm_client_replacements_total{client=\"producer\"} 2\n")) << busy;
  EXPECT_TRUE(Contains(busy, "ellm_job_progress_positions 12288\n")) << busy;
  EXPECT_TRUE(Contains(busy, "ellm_job_progress_target_positions 16000\n")) << busy;

  (*metrics)->SetJobProgress(-1, 0);
  std::string after = (*metrics)->TextExposition();
  EXPECT_TRUE(Contains(after, "ellm_job_progress_positions 0\n")) << after;
  EXPECT_TRUE(Contains(after, "ellm_job_progress_target_positions 0\n")) << after;
}

TEST(Metrics, UnknownPathsAre404AndOtherMethods405) {
  auto metrics = Metrics::Start(LoopbackAnyPort());
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  int port = (*metrics)->port();
  EXPECT_EQ(Get(port, "/nope").status, 404);
  EXPECT_EQ(Get(port, "/").status, 404);
  EXPECT_EQ(Get(port, "/metrics/extra").status, 404);
  EXPECT_EQ(Get(port, "/metrics?x=1").status, 200);
  HttpResponse head = Request(port, "HEAD", "/healthz");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(Request(port, "POST", "/metrics").status, 405);
}

// Issue 53: the listener had two threads and no header deadline, so two
// silent connections held /healthz for 10 s each and a liveness probe
// failed. Behind the front gate a hundred of them hold nothing.
TEST(Metrics, SilentConnectionsDoNotHoldTheProbes) {
  auto metrics = Metrics::Start(LoopbackAnyPort());
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  const int port = (*metrics)->port();
  std::vector<int> silent;
  for (int i = 0; i < 100; ++i) {
    const int fd = ellm::testing::ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    (void)!send(fd, "GET /healthz HTTP/1.1\r\nHo", 26, MSG_NOSIGNAL);
    silent.push_back(fd);
  }
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Get(port, "/healthz").status, 200);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  }
  for (int fd : silent) close(fd);
}

TEST(Metrics, SecondServerOnTheSamePortFailsNamingTheAddress) {
  auto first = Metrics::Start(LoopbackAnyPort());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  MetricsConfig same = LoopbackAnyPort();
  same.listen = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = Metrics::Start(same);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(Contains(second.status().message(), "cannot listen on '" + same.listen + "'"))
      << second.status().ToString();
  // The kernel's reason, not just that it failed.
  EXPECT_TRUE(Contains(second.status().message(), "cannot bind")) << second.status().ToString();
  // The first server is unaffected.
  EXPECT_EQ(Get((*first)->port(), "/healthz").status, 200);
}

TEST(Metrics, StopsServingWhenDestroyed) {
  auto metrics = Metrics::Start(LoopbackAnyPort());
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  int port = (*metrics)->port();
  ASSERT_EQ(Get(port, "/healthz").status, 200);
  metrics->reset();
  EXPECT_EQ(Get(port, "/healthz").status, 0);
}

TEST(Metrics, DisabledStartsNoServerButRecords) {
  MetricsConfig config;
  ASSERT_FALSE(config.enabled);
  auto metrics = Metrics::Start(config);
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  EXPECT_EQ((*metrics)->port(), 0);
  (*metrics)->JobFinished("compare-contracts", false, 3);
  (*metrics)->SetReadiness("");
  EXPECT_TRUE(Contains((*metrics)->TextExposition(),
                       "ellm_jobs_total{pipeline=\"compare-contracts\",status=\"failed\"} 1\n"));
}

TEST(Metrics, InvalidListenAddressIsRejected) {
  MetricsConfig config = LoopbackAnyPort();
  config.listen = "127.0.0.1:99999";
  auto metrics = Metrics::Start(config);
  ASSERT_FALSE(metrics.ok());
  EXPECT_TRUE(Contains(metrics.status().message(), "metrics.listen"))
      << metrics.status().ToString();
}

}  // namespace
}  // namespace ellm::daemon
