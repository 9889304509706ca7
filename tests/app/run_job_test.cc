// The job sequence (app::RunJob) branch by branch: a run stored then
// published, its progress and log lines, redelivery, cancellation, a lost
// partition, attempts used up, a store error and a crash after the commit;
// with the fake processor and publisher of run_job_fixture.h. Publishing:
// run_job_publish_test.cc; transient failures and deadlines:
// run_job_failure_test.cc.
#include "ellm/app/run_job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "run_job_fixture.h"

namespace ellm::app::testing {
namespace {

using pipelines::PipelineResult;
using store::BeginDecision;
using store::JobStatus;

TEST_F(RunJobTest, SucceededIsStoredThenPublishedOnce) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("the summary"); });
  JobRun run = Run(p, "j1");
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_TRUE(run.error.ok()) << run.error.ToString();
  EXPECT_EQ(run.decision, BeginDecision::kRun);
  EXPECT_EQ(run.attempt, 1);
  EXPECT_TRUE(run.ran);
  EXPECT_EQ(run.status, JobStatus::kSucceeded);
  EXPECT_EQ(p.runs, 1);

  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.status, JobStatus::kSucceeded);
  ASSERT_TRUE(j.result.has_value());
  EXPECT_EQ(j.result->output_text, "the summary");
  ASSERT_EQ(j.documents.size(), 1u);
  EXPECT_EQ(j.source.offset, 7);

  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].id, "j1");
  EXPECT_EQ(publisher_.published[0].status, JobStatus::kSucceeded);
  EXPECT_TRUE(publisher_.dead_lettered.empty());
  EXPECT_EQ(Events("j1", "published"), 1);
  EXPECT_EQ(Events("j1", "dead_lettered"), 0);

  EXPECT_EQ(statuses_, (std::vector<std::string>{"running job j1 (fake)", "idle"}));
  EXPECT_EQ(finished_, (std::vector<std::string>{"fake:ok"}));
  EXPECT_EQ(results_, (std::vector<std::string>{"the summary"}));
  EXPECT_NE(log_.find("job=j1 pipeline=fake attempt=1 documents=1 from ellm.jobs[0]@7"),
            std::string::npos)
      << log_;
  EXPECT_NE(log_.find("job=j1 succeeded (single-pass, 12 prompt + 3 generated tokens, 11 chars)"),
            std::string::npos)
      << log_;
}

// Issue 37 item 6: the daemon shows the running job's progress (STATUS=,
// ellm_job_progress_*): the processor's steps reach RunJobOptions::progress
// with the job's id and pipeline, during that run only.
TEST_F(RunJobTest, TheProcessorsProgressReachesTheCallerWithTheJobsIdDuringTheRun) {
  FakeProcessor* self = nullptr;
  FakeProcessor p([&](auto&, auto&) {
    self->Report({"prefill", 1024, 3000});
    self->Report({"prefill", 3000, 3000});
    return Succeeds("done");
  });
  self = &p;
  std::vector<std::string> seen;
  RunJobOptions o = Options();
  o.progress = [&](const std::string& id, const std::string& pipeline,
                   const pipelines::Progress& step) {
    seen.push_back(id + " (" + pipeline + "): " + step.stage + " " + std::to_string(step.done) +
                   "/" + std::to_string(step.total));
  };
  std::atomic<bool> cancel{false};
  EXPECT_EQ(Run(p, "j1", cancel, o).outcome, JobOutcome::kDone);
  EXPECT_EQ(seen, (std::vector<std::string>{"j1 (fake): prefill 1024/3000",
                                            "j1 (fake): prefill 3000/3000"}));
  p.Report({"prefill", 1, 2});
  EXPECT_EQ(seen.size(), 2u) << "the processor keeps no callback after the run";
}

// Regression (issue 37 item 7): "succeeded: <output>" printed the summary's
// start with its newlines, so the lines after it had no job id, and a
// summary went into the logs at info. At info the line gives counts only;
// the text, newlines escaped, is a debug line.
TEST_F(RunJobTest, TheOutputIsLoggedOnlyAtDebugOnOneLine) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("## Purpose\nThe review\ttells.\n"); });
  std::vector<std::pair<LogLevel, std::string>> lines;
  RunJobOptions o = Options();
  o.log = [&](LogLevel level, const std::string& line) { lines.emplace_back(level, line); };
  std::atomic<bool> cancel{false};
  Run(p, "j1", cancel, o);
  bool counted = false, excerpt = false;
  for (const auto& [level, line] : lines) {
    EXPECT_EQ(line.rfind("job=j1 ", 0), 0u) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    if (level == LogLevel::kDebug) {
      excerpt |= line == "job=j1 output: ## Purpose\\nThe review\\ttells.\\n";
    } else {
      EXPECT_EQ(line.find("Purpose"), std::string::npos) << line;
      counted |= level == LogLevel::kInfo &&
                 line == "job=j1 succeeded (single-pass, 12 prompt + 3 generated tokens, 29 chars)";
    }
  }
  EXPECT_TRUE(counted);
  EXPECT_TRUE(excerpt);
}

// Issue 37 item 7: an answer that does not parse (output_invalid) is
// document content too. The warn line names the failure without it; the
// answer is a debug line (log.level: debug), while the store and the
// dead-letter copy keep it for whoever may read results.
TEST_F(RunJobTest, AFailedAnswerIsLoggedOnlyAtDebug) {
  FakeProcessor p([](auto&, auto&) {
    PipelineResult r =
        PipelineResult::Failed("output_invalid", "pipeline 'fake': the answer lacks key 'title'");
    r.error_answer = "{\"revenue\": \"EUR 4.2 billion\",\n";
    return r;
  });
  std::vector<std::pair<LogLevel, std::string>> lines;
  RunJobOptions o = Options();
  o.log = [&](LogLevel level, const std::string& line) { lines.emplace_back(level, line); };
  std::atomic<bool> cancel{false};
  EXPECT_EQ(Run(p, "j1", cancel, o).status, JobStatus::kFailed);
  bool warned = false, debug = false;
  for (const auto& [level, line] : lines) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    if (level == LogLevel::kDebug) {
      debug |= line == "job=j1 the answer began: {\"revenue\": \"EUR 4.2 billion\",\\n";
    } else {
      EXPECT_EQ(line.find("4.2 billion"), std::string::npos) << line;
      warned |=
          level == LogLevel::kWarn &&
          line == "job=j1 failed (output_invalid): pipeline 'fake': the answer lacks key 'title'";
    }
  }
  EXPECT_TRUE(warned);
  EXPECT_TRUE(debug);
  const std::string stored = Get("j1").error_message;
  EXPECT_EQ(stored,
            "pipeline 'fake': the answer lacks key 'title'; the answer began: {\"revenue\": \"EUR "
            "4.2 billion\",\n");
  ASSERT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.dead_lettered[0].message, stored);
}

TEST_F(RunJobTest, AlreadyDoneIsNotRunOrPublishedAgain) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("once"); });
  ASSERT_EQ(Run(p, "j1").outcome, JobOutcome::kDone);
  JobRun again = Run(p, "j1");
  EXPECT_EQ(again.outcome, JobOutcome::kDone);
  EXPECT_EQ(again.decision, BeginDecision::kAlreadyDone);
  EXPECT_EQ(again.status, JobStatus::kSucceeded);
  EXPECT_FALSE(again.ran);
  EXPECT_EQ(p.runs, 1);
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(Events("j1", "published"), 1);
  EXPECT_EQ(finished_.size(), 1u);
  EXPECT_NE(log_.find("job=j1 delivered again; already succeeded"), std::string::npos) << log_;
}

TEST_F(RunJobTest, PipelineErrorFailsTheJobAndDeadLettersIt) {
  FakeProcessor p([](auto&, auto&) {
    return PipelineResult::Failed("document.encrypted", "a.pdf is encrypted");
  });
  JobRun run = Run(p, "j1");
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(run.status, JobStatus::kFailed);
  EXPECT_TRUE(run.ran);
  EXPECT_EQ(run.result.error_code, "document.encrypted");

  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.status, JobStatus::kFailed);
  EXPECT_EQ(j.error_code, "document.encrypted");
  EXPECT_FALSE(j.result.has_value());
  ASSERT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.dead_lettered[0].job_id, "j1");
  EXPECT_EQ(publisher_.dead_lettered[0].code, "document.encrypted");
  EXPECT_EQ(publisher_.dead_lettered[0].message, "a.pdf is encrypted");
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].status, JobStatus::kFailed);
  EXPECT_EQ(Events("j1", "dead_lettered"), 1);
  EXPECT_EQ(Events("j1", "published"), 1);
  EXPECT_EQ(finished_, (std::vector<std::string>{"fake:failed"}));
  EXPECT_TRUE(results_.empty());

  // Delivered again: neither run nor sent again.
  JobRun again = Run(p, "j1");
  EXPECT_EQ(again.outcome, JobOutcome::kDone);
  EXPECT_EQ(again.decision, BeginDecision::kAlreadyDone);
  EXPECT_EQ(p.runs, 1);
  EXPECT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.published.size(), 1u);
}

TEST_F(RunJobTest, CancelledStoresNothingAndRunsAgainOnTheNextDelivery) {
  FakeProcessor p([](auto&, const std::atomic<bool>& cancel) {
    return cancel ? PipelineResult::Cancelled() : Succeeds("second time");
  });
  std::atomic<bool> cancel{true};
  JobRun first = Run(p, "j1", cancel, Options());
  EXPECT_EQ(first.outcome, JobOutcome::kRetryLater);
  EXPECT_TRUE(first.error.ok()) << "a cancelled job is not an error: " << first.error.ToString();
  EXPECT_TRUE(first.result.cancelled);
  EXPECT_EQ(first.status, JobStatus::kQueued);
  EXPECT_EQ(Get("j1").status, JobStatus::kQueued);
  EXPECT_EQ(Get("j1").attempts, 0) << "a cancelled run gives its attempt back";
  EXPECT_EQ(Events("j1", "cancelled"), 1);
  EXPECT_FALSE(Get("j1").result.has_value());
  EXPECT_TRUE(publisher_.published.empty());
  EXPECT_TRUE(publisher_.dead_lettered.empty());
  EXPECT_TRUE(finished_.empty()) << "a cancelled run is not counted as finished";
  EXPECT_EQ(statuses_.back(), "idle");
  EXPECT_NE(log_.find("job=j1 cancelled; it will run again"), std::string::npos) << log_;

  cancel = false;
  JobRun second = Run(p, "j1", cancel, Options());
  EXPECT_EQ(second.outcome, JobOutcome::kDone);
  EXPECT_EQ(second.decision, BeginDecision::kRun);
  EXPECT_EQ(second.attempt, 1);  // the cancelled run did not count
  EXPECT_EQ(Get("j1").status, JobStatus::kSucceeded);
  EXPECT_EQ(publisher_.published.size(), 1u);
}

TEST_F(RunJobTest, PartitionLostMidRunIsCancelledAndTheNewOwnerFinishesIt) {
  std::atomic<bool> started{false};
  FakeProcessor slow([&](auto&, const std::atomic<bool>& cancel) {
    started = true;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!cancel && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return cancel ? PipelineResult::Cancelled() : Succeeds("too late");
  });
  std::atomic<bool> cancel{false};
  // The consumer's thread: the partition is revoked while the job runs.
  std::thread revoke([&] {
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cancel = true;
  });
  JobRun lost = Run(slow, "j1", cancel, Options());
  revoke.join();
  EXPECT_EQ(lost.outcome, JobOutcome::kRetryLater);
  EXPECT_TRUE(lost.result.cancelled);
  EXPECT_EQ(Get("j1").status, JobStatus::kQueued);
  EXPECT_TRUE(publisher_.published.empty());

  // The partition's new owner: another worker on its own connection.
  auto other = Open();
  FakeProcessor p([](auto&, auto&) { return Succeeds("done elsewhere"); });
  std::atomic<bool> no_cancel{false};
  JobRun run = RunJob(*other, p, Job("j1", "w2"), Request("j1"), no_cancel, Options());
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(run.attempt, 1);
  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.status, JobStatus::kSucceeded);
  EXPECT_EQ(j.result->output_text, "done elsewhere");
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(j.events.front().detail, "attempt 1 by w1");
  EXPECT_EQ(Events("j1", "started"), 2);
}

TEST_F(RunJobTest, OutOfAttemptsFailsWithoutRunningAndPublishes) {
  store_ = Open(/*max_attempts=*/1);
  FakeProcessor p([](auto&, auto&) { return Succeeds("never"); });
  // A process that died mid-job: its attempt began and never ended (a
  // cancelled run would have given it back).
  ASSERT_TRUE(store_->Begin(Job("j1")).ok());
  std::atomic<bool> cancel{false};
  JobRun run = Run(p, "j1", cancel, Options());
  EXPECT_EQ(run.decision, BeginDecision::kGaveUp);
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_FALSE(run.ran);
  EXPECT_EQ(p.runs, 0);
  EXPECT_EQ(Get("j1").status, JobStatus::kFailed);
  EXPECT_EQ(Get("j1").error_code, "attempts_exhausted");
  ASSERT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.dead_lettered[0].code, "attempts_exhausted");
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_NE(log_.find("job=j1 failed: started 1 times without finishing"), std::string::npos)
      << log_;
}

TEST_F(RunJobTest, StoreErrorAtBeginRunsNothing) {
  auto read_only = Open(3, /*read_only=*/true);
  ASSERT_NE(read_only, nullptr);
  FakeProcessor p([](auto&, auto&) { return Succeeds("x"); });
  std::atomic<bool> cancel{false};
  JobRun run = Run(p, "j2", cancel, Options(), read_only.get());
  EXPECT_EQ(run.outcome, JobOutcome::kRetryLater);
  EXPECT_FALSE(run.error.ok());
  EXPECT_FALSE(run.ran);
  EXPECT_EQ(p.runs, 0);
  EXPECT_TRUE(store_->Get("j2").ok() && !store_->Get("j2")->has_value());
}

TEST_F(RunJobTest, WithoutAPublisherTheOutcomeIsOnlyStored) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("local"); });
  std::atomic<bool> cancel{false};
  JobRun run = Run(p, "cli-1", cancel, RunJobOptions{});
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(run.status, JobStatus::kSucceeded);
  ASSERT_TRUE(run.result.output.has_value());
  EXPECT_EQ(run.result.output->output_text, "local");
  EXPECT_EQ(Get("cli-1").status, JobStatus::kSucceeded);
  EXPECT_EQ(Events("cli-1", "published"), 0);
  EXPECT_TRUE(publisher_.published.empty());
}

// ELLM_TEST_CRASH_AFTER_STORE: the process dies right after the success is
// committed; the redelivery finds it stored and only publishes.
TEST_F(RunJobTest, CrashAfterStoreCommitLeavesTheResultToPublish) {
  // "fast": the child is forked from here, so it writes to this test's
  // store file (it opens its own connection).
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(
      {
        auto store = Open();
        FakeProcessor p([](auto&, auto&) { return Succeeds("survives"); });
        RunJobOptions o = Options();
        o.crash_after_store_commit = true;
        std::atomic<bool> cancel{false};
        RunJob(*store, p, Job("j1"), Request("j1"), cancel, o);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  EXPECT_EQ(Get("j1").status, JobStatus::kSucceeded);
  EXPECT_EQ(Events("j1", "published"), 0);

  FakeProcessor p([](auto&, auto&) { return Succeeds("not again"); });
  JobRun run = Run(p, "j1");
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  EXPECT_EQ(p.runs, 0);
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].result->output_text, "survives");
}

}  // namespace
}  // namespace ellm::app::testing
