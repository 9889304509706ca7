// RunJob's failures by kind (issue 37), with the fake processor of
// run_job_fixture.h: transient failures (disk full, out of memory, a failed
// fork) keep the job queued and use up an attempt; permanent ones fail at
// once; a deadline (JobTimeout) fails the job as deadline_exceeded.
#include "ellm/app/run_job.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "run_job_fixture.h"

namespace ellm::app::testing {
namespace {

using pipelines::PipelineResult;
using store::JobStatus;

PipelineResult TransientFailure() {
  PipelineResult r = PipelineResult::FailedWith(
      "document.error", "document 1 of 1: fork of the extractor: Resource temporarily unavailable",
      UnavailableError("fork of the extractor"));
  EXPECT_TRUE(r.transient);
  return r;
}

TEST_F(RunJobTest, ATransientFailureKeepsTheJobQueuedAndTheNextAttemptSucceeds) {
  FakeProcessor p([&](auto&, auto&) { return p.runs == 1 ? TransientFailure() : Succeeds("ok"); });
  std::vector<std::string> failures;
  RunJobOptions o = Options();
  o.on_failure = [&](const std::string& pipeline, bool transient) {
    failures.push_back(pipeline + (transient ? ":transient" : ":permanent"));
  };
  std::atomic<bool> cancel{false};
  JobRun first = Run(p, "j1", cancel, o);
  EXPECT_EQ(first.outcome, JobOutcome::kRetryLater);
  EXPECT_EQ(first.error.code(), StatusCode::kUnavailable);
  EXPECT_NE(first.error.message().find("unavailable: document 1 of 1: fork of the extractor"),
            std::string::npos)
      << first.error.ToString();
  EXPECT_EQ(first.status, JobStatus::kQueued);
  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.status, JobStatus::kQueued);
  EXPECT_EQ(j.attempts, 1) << "a transient failure uses up its attempt";
  EXPECT_TRUE(j.error_code.empty());
  ASSERT_EQ(Events("j1", "transient_error"), 1);
  for (const auto& e : j.events) {
    if (e.kind == "transient_error") {
      EXPECT_EQ(e.detail.rfind("attempt 1: unavailable: document 1 of 1: fork", 0), 0u) << e.detail;
    }
  }
  EXPECT_TRUE(publisher_.dead_lettered.empty());
  EXPECT_TRUE(publisher_.published.empty());
  EXPECT_TRUE(finished_.empty()) << "nothing finished yet";
  EXPECT_EQ(failures, (std::vector<std::string>{"fake:transient"}));
  EXPECT_NE(log_.find("job=j1 transient failure on attempt 1 of 3 (unavailable: "),
            std::string::npos)
      << log_;

  JobRun second = Run(p, "j1", cancel, o);
  EXPECT_EQ(second.outcome, JobOutcome::kDone);
  EXPECT_EQ(second.attempt, 2);
  EXPECT_EQ(Get("j1").status, JobStatus::kSucceeded);
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_TRUE(publisher_.dead_lettered.empty());
  EXPECT_EQ(finished_, (std::vector<std::string>{"fake:ok"}));
}

TEST_F(RunJobTest, ATransientFailureOfTheLastAttemptFailsTheJobNamingIt) {
  store_ = Open(/*max_attempts=*/2);
  FakeProcessor p([](auto&, auto&) {
    PipelineResult r = PipelineResult::FailedWith(
        "engine_error", "RESOURCE_EXHAUSTED: spilling KV cache: No space left on device",
        ErrnoError(ENOSPC, "spilling KV cache"));
    return r;
  });
  std::atomic<bool> cancel{false};
  EXPECT_EQ(Run(p, "j1", cancel, Options()).outcome, JobOutcome::kRetryLater);
  JobRun last = Run(p, "j1", cancel, Options());
  EXPECT_EQ(last.outcome, JobOutcome::kDone);
  EXPECT_EQ(last.status, JobStatus::kFailed);
  EXPECT_EQ(p.runs, 2);
  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.error_code, "attempts_exhausted");
  EXPECT_EQ(j.error_message,
            "gave up after 2 attempts (jobs.max_attempts); the last failed with a transient "
            "error: resource_exhausted: RESOURCE_EXHAUSTED: spilling KV cache: No space left on "
            "device");
  EXPECT_EQ(Events("j1", "transient_error"), 2);
  ASSERT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.dead_lettered[0].code, "attempts_exhausted");
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(finished_, (std::vector<std::string>{"fake:failed"}));
}

TEST_F(RunJobTest, WithoutACallerThatRetriesATransientFailureIsStoredAtOnce) {
  FakeProcessor p([](auto&, auto&) { return TransientFailure(); });
  RunJobOptions o;  // as the CLI: no queue behind it
  std::atomic<bool> cancel{false};
  JobRun run = Run(p, "j1", cancel, o);
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(run.status, JobStatus::kFailed);
  EXPECT_EQ(Get("j1").error_code, "unavailable");
  EXPECT_EQ(Events("j1", "transient_error"), 0);
}

TEST_F(RunJobTest, OutOfMemoryInThePipelineIsATransientFailure) {
  FakeProcessor p([](auto&, auto&) -> PipelineResult { throw std::bad_alloc(); });
  JobRun run = Run(p, "j1");
  EXPECT_EQ(run.outcome, JobOutcome::kRetryLater);
  EXPECT_TRUE(run.result.transient);
  EXPECT_EQ(run.result.error_code, "resource_exhausted");
  EXPECT_EQ(Get("j1").status, JobStatus::kQueued);
  EXPECT_EQ(Events("j1", "transient_error"), 1);
  EXPECT_TRUE(publisher_.dead_lettered.empty());
}

// A bug below that one document triggers (an exception the pipeline did
// not expect) fails that job, once, and the process goes on.
TEST_F(RunJobTest, AnExceptionFromThePipelineFailsTheJobNotTheProcess) {
  FakeProcessor p([](auto&, auto&) -> PipelineResult {
    throw std::out_of_range("basic_string::substr: __pos (which is 50) > this->size()");
  });
  JobRun run = Run(p, "j1");
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(run.status, JobStatus::kFailed);
  EXPECT_FALSE(run.result.transient);
  EXPECT_EQ(Get("j1").error_code, "internal");
  EXPECT_NE(Get("j1").error_message.find("basic_string::substr"), std::string::npos)
      << Get("j1").error_message;
}

TEST_F(RunJobTest, APermanentFailureIsCountedAsOne) {
  FakeProcessor p([](auto&, auto&) {
    return PipelineResult::FailedWith("context_overflow", "too long", OutOfRangeError("x"));
  });
  std::vector<bool> failures;
  RunJobOptions o = Options();
  o.on_failure = [&](const std::string&, bool transient) { failures.push_back(transient); };
  std::atomic<bool> cancel{false};
  JobRun run = Run(p, "j1", cancel, o);
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(Get("j1").error_code, "context_overflow");
  EXPECT_EQ(Get("j1").attempts, 1);
  EXPECT_EQ(failures, (std::vector<bool>{false}));
  EXPECT_EQ(publisher_.dead_lettered.size(), 1u);
}

// Runs until cancelled (at most 10 s).
PipelineResult UntilCancelled(const std::atomic<bool>& cancel) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cancel.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cancel.load() ? PipelineResult::Cancelled() : Succeeds("not stopped");
}

TEST_F(RunJobTest, TheDeadlineStopsTheRunAndFailsItAsDeadlineExceeded) {
  FakeProcessor p([](auto&, const std::atomic<bool>& cancel) { return UntilCancelled(cancel); });
  RunJobOptions o = Options();
  JobTimeoutLimit limit = JobTimeout(/*config_s=*/60, /*message_s=*/1);
  o.timeout = limit.seconds;
  o.timeout_source = limit.source;
  std::atomic<bool> cancel{false};
  auto started = std::chrono::steady_clock::now();
  JobRun run = Run(p, "j1", cancel, o);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_GE(seconds, 1.0);
  EXPECT_LT(seconds, 3.0);
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(run.status, JobStatus::kFailed);
  EXPECT_FALSE(run.result.cancelled);
  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.error_code, "deadline_exceeded");
  EXPECT_EQ(j.error_message.rfind("the job ran longer than its limit of 1 s (the message's "
                                  "timeout_s) and was stopped after 1.",
                                  0),
            0u)
      << j.error_message;
  EXPECT_EQ(j.attempts, 1);
  EXPECT_EQ(Events("j1", "cancelled"), 0);
  ASSERT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.dead_lettered[0].code, "deadline_exceeded");
}

TEST_F(RunJobTest, AShutdownBeforeTheDeadlineIsACancellationNotAFailure) {
  FakeProcessor p([](auto&, const std::atomic<bool>& cancel) { return UntilCancelled(cancel); });
  RunJobOptions o = Options();
  o.timeout = std::chrono::seconds(60);
  o.timeout_source = "jobs.timeout_s";
  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  JobRun run = Run(p, "j1", cancel, o);
  stopper.join();
  EXPECT_EQ(run.outcome, JobOutcome::kRetryLater);
  EXPECT_TRUE(run.result.cancelled);
  EXPECT_EQ(Get("j1").status, JobStatus::kQueued);
  EXPECT_EQ(Get("j1").attempts, 0);
  EXPECT_TRUE(publisher_.dead_lettered.empty());
}

TEST(JobTimeout, TheMessagesLimitIsCappedByTheConfiguredOne) {
  EXPECT_EQ(JobTimeout(0, std::nullopt).seconds.count(), 0);
  EXPECT_EQ(JobTimeout(0, 30).seconds.count(), 30);
  EXPECT_EQ(JobTimeout(0, 30).source, "the message's timeout_s");
  EXPECT_EQ(JobTimeout(60, 30).seconds.count(), 30);
  EXPECT_EQ(JobTimeout(60, 600).seconds.count(), 60);
  EXPECT_EQ(JobTimeout(60, 600).source, "jobs.timeout_s");
  EXPECT_EQ(JobTimeout(60, std::nullopt).seconds.count(), 60);
  EXPECT_EQ(JobTimeout(60, std::nullopt).source, "jobs.timeout_s");
}

}  // namespace
}  // namespace ellm::app::testing
