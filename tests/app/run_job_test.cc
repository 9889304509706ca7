// The job sequence (app::RunJob) branch by branch, with a fake processor and
// a fake publisher over a real SQLite job store in a temp directory: no
// broker, no model.
#include "ellm/app/run_job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <new>
#include <thread>
#include <vector>

#include "test_env.h"

namespace ellm::app {
namespace {

using pipelines::PipelineResult;
using store::BeginDecision;
using store::JobStatus;

// Runs whatever `body` says and counts its runs.
class FakeProcessor : public pipelines::Processor {
 public:
  using Body =
      std::function<PipelineResult(const pipelines::PipelineRequest&, const std::atomic<bool>&)>;
  explicit FakeProcessor(Body body) : body_(std::move(body)) {}

  const std::string& name() const override { return name_; }
  const std::string& version() const override { return version_; }
  PipelineResult Run(const pipelines::PipelineRequest& job,
                     const std::atomic<bool>& cancel) override {
    ++runs;
    return body_(job, cancel);
  }

  void set_progress(pipelines::ProgressFn progress) override { progress_ = std::move(progress); }
  // What the processor reports, if anyone listens.
  void Report(const pipelines::Progress& p) {
    if (progress_) progress_(p);
  }

  int runs = 0;

 private:
  Body body_;
  pipelines::ProgressFn progress_;
  std::string name_ = "fake";
  std::string version_ = "1";
};

PipelineResult Succeeds(const std::string& text) {
  pipelines::PipelineOutput out;
  out.output_text = text;
  out.pipeline_name = "fake";
  out.pipeline_version = "1";
  out.strategy = "single-pass";
  out.prompt_tokens = 12;
  out.generated_tokens = 3;
  out.documents = {{0, "/srv/a.pdf", "ff", 2, 12}};
  PipelineResult r;
  r.output = std::move(out);
  return r;
}

// Records what it was asked to send; a set `fail_*` status makes the next
// calls fail with it (nothing recorded), as a broker that does not ack.
class FakePublisher : public ResultPublisher {
 public:
  struct DeadLettered {
    std::string job_id, code, message;
  };
  StatusOr<std::string> DeadLetter(const std::string& job_id, const std::string& error_code,
                                   const std::string& error_message) override {
    if (!fail_dead_letter.ok()) return fail_dead_letter;
    dead_lettered.push_back({job_id, error_code, error_message});
    return std::string("dlq");
  }
  StatusOr<std::string> Publish(const store::JobRecord& job) override {
    if (!fail_publish.ok()) return fail_publish;
    published.push_back(job);
    return job.reply_to.value_or("results");
  }

  // With `atomic_sends`, an atomic publisher (a Kafka transaction): counts
  // its commits and aborts; `fail_commit` fails the commit.
  bool atomic() const override { return atomic_sends; }
  Status Commit() override {
    ++commits;
    return fail_commit;
  }
  void Abort() override { ++aborts; }

  Status fail_dead_letter;
  Status fail_publish;
  std::vector<DeadLettered> dead_lettered;
  std::vector<store::JobRecord> published;
  bool atomic_sends = false;
  Status fail_commit;
  int commits = 0, aborts = 0;
};

class RunJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ellm::testing::MakeTempDir("ellm-run-job");
    store_ = Open();
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<store::JobStore> Open(int max_attempts = 3, bool read_only = false) {
    store::JobStoreOptions o;
    o.max_attempts = max_attempts;
    o.database.read_only = read_only;
    auto s = store::JobStore::Open(dir_ + "/ellm.db", o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static pipelines::PipelineRequest Request(const std::string& id) {
    pipelines::PipelineRequest m;
    m.job_id = id;
    m.documents.resize(1);
    m.documents[0].path = "/srv/a.pdf";
    return m;
  }
  static store::NewJob Job(const std::string& id, const std::string& worker = "w1") {
    return {id, "fake", "{}", std::nullopt, {"ellm.jobs", 0, 7}, worker};
  }

  // Options that publish through `publisher_` and record every callback.
  RunJobOptions Options() {
    RunJobOptions o;
    o.publisher = &publisher_;
    o.retry_transient = true;
    o.status = [this](const std::string& s) { statuses_.push_back(s); };
    o.on_finished = [this](const std::string& pipeline, bool ok, double seconds) {
      finished_.push_back(pipeline + (ok ? ":ok" : ":failed"));
      EXPECT_GE(seconds, 0);
    };
    o.on_result = [this](const pipelines::PipelineOutput& r) { results_.push_back(r.output_text); };
    o.log = [this](LogLevel, const std::string& line) { log_ += line + "\n"; };
    return o;
  }

  JobRun Run(FakeProcessor& processor, const std::string& id, const std::atomic<bool>& cancel,
             const RunJobOptions& options, store::JobStore* store = nullptr) {
    return RunJob(store ? *store : *store_, processor, Job(id), Request(id), cancel, options);
  }
  JobRun Run(FakeProcessor& processor, const std::string& id) {
    std::atomic<bool> cancel{false};
    return Run(processor, id, cancel, Options());
  }

  store::JobRecord Get(const std::string& id) {
    auto j = store_->Get(id);
    EXPECT_TRUE(j.ok() && j->has_value());
    return j.ok() && j->has_value() ? **j : store::JobRecord{};
  }
  int Events(const std::string& id, const std::string& kind) {
    int n = 0;
    for (const auto& e : Get(id).events) n += e.kind == kind;
    return n;
  }

  std::string dir_;
  std::unique_ptr<store::JobStore> store_;
  FakePublisher publisher_;
  std::vector<std::string> statuses_, finished_, results_;
  std::string log_;
};

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

// Issue 37: transient failures (disk full, out of memory, a failed fork) keep
// the job queued and use up an attempt; permanent ones fail at once; a
// deadline fails the job as deadline_exceeded.

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
}  // namespace ellm::app
