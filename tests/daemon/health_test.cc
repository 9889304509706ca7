#include "health.h"

#include <gtest/gtest.h>

namespace ellm::daemon {
namespace {

constexpr int64_t kS = 1000 * 1000 * 1000;

TEST(ConsumerPollBound, IsHalfTheWatchdogCappedByMaxPollInterval) {
  // WatchdogSec=60 (ellmd.service): 30 s, below the 300 s default.
  PollBound watchdog = ConsumerPollBound(60 * 1000 * 1000, 300000);
  EXPECT_EQ(watchdog.ns, 30 * kS);
  EXPECT_EQ(watchdog.source, "half of WatchdogSec");
  // No watchdog (not under systemd): librdkafka's own bound.
  PollBound plain = ConsumerPollBound(0, 300000);
  EXPECT_EQ(plain.ns, 300 * kS);
  EXPECT_EQ(plain.source, "kafka.max_poll_interval_ms");
  // A max.poll.interval below half the watchdog wins.
  EXPECT_EQ(ConsumerPollBound(60 * 1000 * 1000, 20000).source, "kafka.max_poll_interval_ms");
}

TEST(ConsumerPollProblem, NamesTheSilenceAndTheBound) {
  PollBound bound{30 * kS, "half of WatchdogSec"};
  EXPECT_EQ(ConsumerPollProblem(29 * kS, bound), "");
  EXPECT_EQ(ConsumerPollProblem(30 * kS, bound), "");
  EXPECT_EQ(ConsumerPollProblem(47 * kS + 400, bound),
            "the consumer has not polled for 47 s (bound 30 s, half of WatchdogSec)");
  EXPECT_EQ(ConsumerPollProblem(3 * kS, {2 * kS, "kafka.max_poll_interval_ms"}),
            "the consumer has not polled for 3000 ms (bound 2000 ms, kafka.max_poll_interval_ms)");
}

TEST(HealthProblem, JoinsTheConsumerAndTheStore) {
  EXPECT_EQ(HealthProblem("", ""), "");
  EXPECT_EQ(HealthProblem("", "database is locked"),
            "the store cannot be written: database is locked");
  EXPECT_EQ(HealthProblem("the consumer has not polled for 47 s (bound 30 s, x)", "disk full"),
            "the consumer has not polled for 47 s (bound 30 s, x); the store cannot be written: "
            "disk full");
}

TEST(ReadinessProblem, ReadyOnlyWhileConsuming) {
  EXPECT_EQ(ReadinessProblem(false, true, "", ""), "");
  EXPECT_EQ(ReadinessProblem(false, true, "starting", ""), "starting");
  EXPECT_EQ(ReadinessProblem(false, true, "rebalancing", ""), "rebalancing");
  EXPECT_EQ(ReadinessProblem(false, true, "", "the consumer has not polled for 47 s"),
            "the consumer has not polled for 47 s");
  EXPECT_EQ(ReadinessProblem(true, true, "", ""), "draining");
  // Kafka off: nothing to consume, ready until the stop.
  EXPECT_EQ(ReadinessProblem(false, false, "starting", ""), "");
  EXPECT_EQ(ReadinessProblem(true, false, "", ""), "draining");
}

TEST(JobStatusLine, NamesTheJobItsPipelineAndItsStep) {
  EXPECT_EQ(JobStatusLine("q3", "summarize-report", "prefill", 12288, 16000),
            "running job q3 (summarize-report): prefill 12288/16000");
  EXPECT_EQ(JobStatusLine("q3", "summarize-report", "map 2/5", 1, 5),
            "running job q3 (summarize-report): map 2/5");
}

}  // namespace
}  // namespace ellm::daemon
