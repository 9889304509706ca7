// The RunJob tests' fixture (run_job_test.cc, run_job_publish_test.cc,
// run_job_failure_test.cc): a fake processor and a fake publisher over a
// real SQLite job store in a temp directory: no broker, no model. Not in an
// unnamed namespace: GoogleTest requires one fixture class for a suite
// whose tests are in several files.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ellm/app/run_job.h"
#include "test_env.h"

namespace ellm::app::testing {

// Runs whatever `body` says and counts its runs.
class FakeProcessor : public pipelines::Processor {
 public:
  using Body = std::function<pipelines::PipelineResult(const pipelines::PipelineRequest&,
                                                       const std::atomic<bool>&)>;
  explicit FakeProcessor(Body body) : body_(std::move(body)) {}

  const std::string& name() const override { return name_; }
  const std::string& version() const override { return version_; }
  pipelines::PipelineResult Run(const pipelines::PipelineRequest& job,
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

inline pipelines::PipelineResult Succeeds(const std::string& text) {
  pipelines::PipelineOutput out;
  out.output_text = text;
  out.pipeline_name = "fake";
  out.pipeline_version = "1";
  out.strategy = "single-pass";
  out.prompt_tokens = 12;
  out.generated_tokens = 3;
  out.documents = {{0, "/srv/a.pdf", "ff", 2, 12}};
  pipelines::PipelineResult r;
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

}  // namespace ellm::app::testing
