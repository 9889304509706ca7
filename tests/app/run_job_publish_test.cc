// RunJob's result events and dead-letter copies, through the fake publisher
// of run_job_fixture.h: where they go, what a broker that refuses them or is
// away does to the job, atomic (transactional) publishers, and
// PublishFinished.
#include "ellm/app/run_job.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "run_job_fixture.h"

namespace ellm::app::testing {
namespace {

using pipelines::PipelineResult;
using store::BeginDecision;
using store::JobStatus;

TEST_F(RunJobTest, PublishesToTheJobsReplyTo) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("x"); });
  store::NewJob job = Job("j1");
  job.reply_to = "replies";
  std::atomic<bool> cancel{false};
  JobRun run = RunJob(*store_, p, job, Request("j1"), cancel, Options());
  EXPECT_EQ(run.outcome, JobOutcome::kDone);
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].reply_to, "replies");
  std::string published_to;
  for (const auto& e : Get("j1").events) {
    if (e.kind == "published") published_to += e.detail;
  }
  EXPECT_EQ(published_to, "replies");
}

TEST_F(RunJobTest, PublishFailureKeepsTheOutcomeAndTheRetryPublishesOnce) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("kept"); });
  publisher_.fail_publish = UnavailableError("broker: delivery timed out");
  JobRun first = Run(p, "j1");
  EXPECT_EQ(first.outcome, JobOutcome::kRetryLater);
  EXPECT_EQ(first.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(Get("j1").status, JobStatus::kSucceeded);  // durable before publishing
  EXPECT_EQ(Events("j1", "published"), 0);
  EXPECT_NE(log_.find("job=j1 result event not published yet"), std::string::npos) << log_;

  publisher_.fail_publish = OkStatus();
  JobRun second = Run(p, "j1");
  EXPECT_EQ(second.outcome, JobOutcome::kDone);
  EXPECT_EQ(second.decision, BeginDecision::kAlreadyDone);
  EXPECT_EQ(p.runs, 1);  // not run again
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].result->output_text, "kept");
  EXPECT_EQ(Events("j1", "published"), 1);

  JobRun third = Run(p, "j1");
  EXPECT_EQ(third.outcome, JobOutcome::kDone);
  EXPECT_EQ(publisher_.published.size(), 1u);
}

// A result event the broker keeps refusing (a topic it will not write, a
// message too large) must not hold the partition: after
// max_publish_attempts deliveries the job fails as publish_failed, its
// result kept, and the message can be committed.
TEST_F(RunJobTest, AnEventThatCannotBeDeliveredEndsAsPublishFailedAfterTheBound) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("kept"); });
  publisher_.fail_publish = InvalidArgumentError("topic 'replies': Broker: Message size too large");
  RunJobOptions o = Options();
  o.max_publish_attempts = 3;
  std::atomic<bool> cancel{false};
  for (int i = 1; i <= 2; ++i) {
    JobRun r = Run(p, "j1", cancel, o);
    EXPECT_EQ(r.outcome, JobOutcome::kRetryLater) << i;
    EXPECT_EQ(Get("j1").status, JobStatus::kSucceeded) << i;
    EXPECT_EQ(Events("j1", "publish_error"), i);
  }
  JobRun last = Run(p, "j1", cancel, o);
  EXPECT_EQ(last.outcome, JobOutcome::kDone);  // the partition moves on
  EXPECT_TRUE(last.error.ok()) << last.error.ToString();
  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.status, JobStatus::kFailed);
  EXPECT_EQ(j.error_code, "publish_failed");
  EXPECT_NE(j.error_message.find("after 3 attempts"), std::string::npos) << j.error_message;
  EXPECT_NE(j.error_message.find("topic 'replies'"), std::string::npos) << j.error_message;
  ASSERT_TRUE(j.result.has_value());  // the work is not lost
  EXPECT_EQ(j.result->output_text, "kept");
  EXPECT_EQ(Events("j1", "publish_failed"), 1);
  EXPECT_EQ(p.runs, 1);
  EXPECT_NE(log_.find("job=j1 publish_failed: result event could not be delivered"),
            std::string::npos)
      << log_;
  // Delivered again later: nothing more is tried or changed.
  publisher_.fail_publish = OkStatus();
  JobRun again = Run(p, "j1", cancel, o);
  EXPECT_EQ(again.outcome, JobOutcome::kDone);
  EXPECT_TRUE(publisher_.published.empty());
  EXPECT_EQ(Events("j1", "publish_failed"), 1);
}

// A broker away is waited out however long it takes: no job is given up
// because of an outage.
TEST_F(RunJobTest, ABrokerOutageIsNeverCountedTowardsTheBound) {
  FakeProcessor p([](auto&, auto&) { return Succeeds("kept"); });
  RunJobOptions o = Options();
  o.max_publish_attempts = 2;
  std::atomic<bool> cancel{false};
  for (Status transient :
       {UnavailableError("all brokers down"), DeadlineExceededError("no delivery report"),
        ResourceExhaustedError("queue full"), UnavailableError("again")}) {
    publisher_.fail_publish = transient;
    EXPECT_EQ(Run(p, "j1", cancel, o).outcome, JobOutcome::kRetryLater);
  }
  EXPECT_EQ(Get("j1").status, JobStatus::kSucceeded);
  EXPECT_EQ(Events("j1", "publish_error"), 0);
  publisher_.fail_publish = OkStatus();
  EXPECT_EQ(Run(p, "j1", cancel, o).outcome, JobOutcome::kDone);
  EXPECT_EQ(publisher_.published.size(), 1u);
}

TEST_F(RunJobTest, ADeadLetterCopyThatCannotBeDeliveredIsBoundedToo) {
  FakeProcessor p([](auto&, auto&) {
    return PipelineResult::Failed("document.encrypted", "a.pdf is encrypted");
  });
  publisher_.fail_dead_letter = InternalError("dead-letter topic 'dlq': unknown topic");
  RunJobOptions o = Options();
  o.max_publish_attempts = 2;
  std::atomic<bool> cancel{false};
  EXPECT_EQ(Run(p, "j1", cancel, o).outcome, JobOutcome::kRetryLater);
  EXPECT_EQ(Run(p, "j1", cancel, o).outcome, JobOutcome::kDone);
  store::JobRecord j = Get("j1");
  EXPECT_EQ(j.error_code, "publish_failed");
  EXPECT_NE(j.error_message.find("dead-letter copy could not be delivered after 2 attempts"),
            std::string::npos)
      << j.error_message;
  EXPECT_TRUE(publisher_.published.empty());  // given up: no result event either
}

// Issue 37 item 2: with an atomic publisher (Kafka transactions) a job's
// events are recorded only after the commit that makes them visible; a
// failed commit records nothing, so the redelivery sends both again (and
// does not run the job again); a failed send aborts what was sent with it.
TEST_F(RunJobTest, AnAtomicPublisherRecordsItsEventsOnlyAfterTheCommit) {
  FakeProcessor p([](auto&, auto&) { return PipelineResult::Failed("document.error", "bad"); });
  publisher_.atomic_sends = true;
  publisher_.fail_commit = UnavailableError("the transaction was aborted");
  JobRun first = Run(p, "j1");
  EXPECT_EQ(first.outcome, JobOutcome::kRetryLater);
  EXPECT_EQ(publisher_.commits, 1);
  EXPECT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(Events("j1", "dead_lettered"), 0);
  EXPECT_EQ(Events("j1", "published"), 0);
  EXPECT_NE(log_.find("job=j1 events not committed yet"), std::string::npos) << log_;

  publisher_.fail_commit = OkStatus();
  JobRun second = Run(p, "j1");
  EXPECT_EQ(second.outcome, JobOutcome::kDone);
  EXPECT_EQ(p.runs, 1);
  EXPECT_EQ(publisher_.commits, 2);
  EXPECT_EQ(publisher_.dead_lettered.size(), 2u);
  EXPECT_EQ(publisher_.published.size(), 2u);
  EXPECT_EQ(Events("j1", "dead_lettered"), 1);
  EXPECT_EQ(Events("j1", "published"), 1);

  // Delivered again (a second message with the same id): nothing to send,
  // but the commit still marks the message consumed.
  EXPECT_EQ(Run(p, "j1").outcome, JobOutcome::kDone);
  EXPECT_EQ(publisher_.commits, 3);
  EXPECT_EQ(publisher_.published.size(), 2u);

  // A refused result event aborts the dead-letter copy sent before it.
  publisher_.fail_publish = UnavailableError("broker away");
  EXPECT_EQ(Run(p, "j2").outcome, JobOutcome::kRetryLater);
  EXPECT_EQ(publisher_.aborts, 1);
  EXPECT_EQ(publisher_.commits, 3);
  EXPECT_EQ(Events("j2", "dead_lettered"), 0);
}

TEST_F(RunJobTest, DeadLetterFailureSendsNothingUntilTheRetry) {
  FakeProcessor p([](auto&, auto&) { return PipelineResult::Failed("document.error", "bad"); });
  publisher_.fail_dead_letter = UnavailableError("broker away");
  JobRun first = Run(p, "j1");
  EXPECT_EQ(first.outcome, JobOutcome::kRetryLater);
  EXPECT_EQ(Get("j1").status, JobStatus::kFailed);
  EXPECT_TRUE(publisher_.published.empty());  // the result event waits for the copy
  EXPECT_NE(log_.find("job=j1 dead-letter copy not sent yet"), std::string::npos) << log_;

  publisher_.fail_dead_letter = OkStatus();
  JobRun second = Run(p, "j1");
  EXPECT_EQ(second.outcome, JobOutcome::kDone);
  EXPECT_EQ(p.runs, 1);
  EXPECT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(Events("j1", "dead_lettered"), 1);
}

TEST_F(RunJobTest, PublishFinishedSendsAnInvalidMessagesCopyAndResultOnce) {
  store::NewJob job = Job("bad");
  auto failed = store_->Fail(job, "invalid_message", "no documents");
  ASSERT_TRUE(failed.ok() && *failed);
  ASSERT_TRUE(PublishFinished(*store_, "bad", publisher_, Options()).ok());
  ASSERT_TRUE(PublishFinished(*store_, "bad", publisher_, Options()).ok());
  ASSERT_EQ(publisher_.dead_lettered.size(), 1u);
  EXPECT_EQ(publisher_.dead_lettered[0].code, "invalid_message");
  EXPECT_EQ(publisher_.published.size(), 1u);
  EXPECT_FALSE(PublishFinished(*store_, "unknown", publisher_, Options()).ok());
  EXPECT_NE(log_.find("job=unknown cannot read it back: missing"), std::string::npos) << log_;
}

}  // namespace
}  // namespace ellm::app::testing
