// What ellmd's /healthz, /readyz and systemd STATUS= line say, computed from
// the daemon's state by pure functions (the signal thread calls them every
// 200 ms; tests call them with made-up clocks).
//
// /healthz fails (503) when the process should be restarted:
//   - the consumer thread has not polled within its bound (ConsumerPollBound:
//     the bound of the systemd watchdog, which stops being fed at the same
//     moment), or
//   - the store cannot be written (Database::ProbeWrite, every
//     kStoreProbeInterval on a connection of its own; every
//     kStoreRecheckInterval while it fails).
// /readyz passes (200) only while the consumer is consuming: assigned
// partitions and polling within its bound; it fails while starting, joining
// the group, rebalancing, after the partitions were lost, while a consumer
// is replaced after a fatal error, and while draining.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ellm::daemon {

// How often the signal thread checks that the store can be written.
// Rarely enough that the probe's write (one WAL frame and fsync) costs
// nothing; often enough that a full disk shows within a scrape or two.
constexpr std::chrono::seconds kStoreProbeInterval{10};
// While the store cannot be written it is probed this often, so that
// /healthz passes again within a second of the store's recovery.
constexpr std::chrono::seconds kStoreRecheckInterval{1};

struct PollBound {
  int64_t ns = 0;
  std::string source;  // "half of WatchdogSec" or "kafka.max_poll_interval_ms"
};

// The longest the consumer thread may go without polling (it polls about
// every 100 ms, also while a job runs): half of systemd's WatchdogSec when
// the watchdog is on (`watchdog_usec` > 0; the signal thread feeds it only
// within this bound), and never more than kafka.max_poll_interval_ms (past
// it librdkafka gives up the consumer's partitions itself).
PollBound ConsumerPollBound(uint64_t watchdog_usec, int max_poll_interval_ms);

// "" when `since_poll_ns` is within `bound`, else "the consumer has not
// polled for 47 s (bound 30 s, half of WatchdogSec)".
std::string ConsumerPollProblem(int64_t since_poll_ns, const PollBound& bound);

// /healthz's reason: "" (healthy), or the consumer's problem and/or "the
// store cannot be written: <store_error>", joined by "; ".
std::string HealthProblem(const std::string& consumer_problem, const std::string& store_error);

// /readyz's reason: "" (ready) or why not. `draining`: a stop signal came.
// `not_consuming`: the consumer's own word (JobConsumerOptions::on_consuming;
// "starting" before it exists). With Kafka off there is nothing to consume
// and the daemon is ready until it drains.
std::string ReadinessProblem(bool draining, bool kafka, const std::string& not_consuming,
                             const std::string& consumer_problem);

// The STATUS= line for a running job's step: "running job q3 (summarize-
// report): prefill 12288/16000"; the stage alone when it counts nothing or
// carries its own count ("map 2/5").
std::string JobStatusLine(const std::string& job_id, const std::string& pipeline,
                          const std::string& stage, int64_t done, int64_t total);

}  // namespace ellm::daemon
