#include "health.h"

#include <algorithm>

namespace ellm::daemon {
namespace {

constexpr int64_t kNsPerMs = 1000 * 1000;
constexpr int64_t kNsPerS = 1000 * kNsPerMs;

// Whole seconds, or milliseconds below 10 s (a test's 2-second bound).
std::string Duration(int64_t ns) {
  if (ns >= 10 * kNsPerS) return std::to_string(ns / kNsPerS) + " s";
  return std::to_string(ns / kNsPerMs) + " ms";
}

}  // namespace

PollBound ConsumerPollBound(uint64_t watchdog_usec, int max_poll_interval_ms) {
  PollBound bound{int64_t{max_poll_interval_ms} * kNsPerMs, "kafka.max_poll_interval_ms"};
  const int64_t half_watchdog = static_cast<int64_t>(watchdog_usec) * 500;
  if (watchdog_usec > 0 && half_watchdog < bound.ns) {
    bound = {half_watchdog, "half of WatchdogSec"};
  }
  return bound;
}

std::string ConsumerPollProblem(int64_t since_poll_ns, const PollBound& bound) {
  if (since_poll_ns <= bound.ns) return "";
  return "the consumer has not polled for " + Duration(since_poll_ns) + " (bound " +
         Duration(bound.ns) + ", " + bound.source + ")";
}

std::string HealthProblem(const std::string& consumer_problem, const std::string& store_error) {
  std::string problem = consumer_problem;
  if (!store_error.empty()) {
    problem +=
        (problem.empty() ? "" : "; ") + std::string("the store cannot be written: ") + store_error;
  }
  return problem;
}

std::string ReadinessProblem(bool draining, bool kafka, const std::string& not_consuming,
                             const std::string& consumer_problem) {
  if (draining) return "draining";
  if (!kafka) return "";
  if (!not_consuming.empty()) return not_consuming;
  return consumer_problem;
}

std::string JobStatusLine(const std::string& job_id, const std::string& pipeline,
                          const std::string& stage, int64_t done, int64_t total) {
  std::string line = "running job " + job_id + " (" + pipeline + "): " + stage;
  // "map 2/5" and "outline 1/3" carry their own count.
  if (total > 0 && stage.find('/') == std::string::npos) {
    line += " " + std::to_string(done) + "/" + std::to_string(total);
  }
  return line;
}

}  // namespace ellm::daemon
