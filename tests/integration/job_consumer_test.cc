// JobConsumer against the real broker (scripts/kafka start): what happens to
// jobs when the Kafka consumer under it hits a fatal client error.
#include "ellm/ingest/job_consumer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "test_env.h"

namespace ellm::ingest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Unique(const std::string& prefix) {
  return prefix + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// Records every message it runs, in order. On `fatal_key`, the first time,
// it raises a fatal error in the consumer and waits to be cancelled (as a
// job would that the consumer can no longer commit), storing nothing.
class RecordingHandler : public JobHandler {
 public:
  RecordingHandler(std::string fatal_key, size_t want_done)
      : fatal_key_(std::move(fatal_key)), want_done_(want_done) {}
  void set_consumer(JobConsumer* c) { consumer_ = c; }

  HandleOutcome Handle(const KafkaMessage& m, const GroupMetadata&,
                       const std::atomic<bool>& cancel) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ran_.push_back(m.key);
    }
    if (m.key == fatal_key_ && !injected_) {
      injected_ = true;
      consumer_->InjectFatalErrorForTest();
      const auto give_up = std::chrono::steady_clock::now() + seconds(30);
      while (!cancel.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(milliseconds(10));
      }
      cancelled_ = cancel.load();
      return HandleOutcome::kRetryLater;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (++done_ == want_done_) all_done_.notify_all();
    return HandleOutcome::kCommit;
  }

  // Waits until `want_done` jobs returned kCommit.
  bool WaitAllDone(std::chrono::seconds budget) {
    std::unique_lock<std::mutex> lock(mu_);
    return all_done_.wait_for(lock, budget, [&] { return done_ >= want_done_; });
  }
  std::vector<std::string> ran() {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_;
  }
  bool cancelled() const { return cancelled_.load(); }

 private:
  const std::string fatal_key_;
  const size_t want_done_;
  JobConsumer* consumer_ = nullptr;
  std::atomic<bool> injected_{false}, cancelled_{false};
  std::mutex mu_;
  std::condition_variable all_done_;
  std::vector<std::string> ran_;
  size_t done_ = 0;
};

// Regression: a broker outage made librdkafka fence its own static member
// (FENCED_INSTANCE_ID, fatal), and ellmd stopped serving. Now the running job
// is cancelled, the consumer is replaced, and every job runs to a commit
// exactly once: nothing is lost and nothing committed runs again.
TEST(JobConsumer, ReplacesTheKafkaConsumerAfterAFatalErrorAndLosesNoJob) {
  ELLM_REQUIRE_KAFKA(brokers);
  JobConsumerOptions o;
  o.kafka.brokers = brokers;
  o.kafka.client_id = "ellm-test-fatal-consumer";
  o.kafka.properties["group.instance.id"] = Unique("instance");
  o.kafka.properties["session.timeout.ms"] = "6000";
  o.group_id = Unique("ellm-test-fatal-group");
  o.jobs_topic = Unique("ellm-test-fatal-jobs");
  o.retry_backoff_initial = milliseconds(50);
  constexpr int kJobs = 5;
  {
    auto p = KafkaProducer::Create(o.kafka);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (int i = 0; i < kJobs; ++i) {
      ASSERT_TRUE((*p)->Produce(o.jobs_topic, "job-" + std::to_string(i), "payload").ok());
    }
  }
  RecordingHandler handler("job-2", kJobs);
  auto jc = JobConsumer::Create(o, &handler);
  ASSERT_TRUE(jc.ok()) << jc.status().ToString();
  handler.set_consumer(jc->get());
  std::atomic<bool> stop{false};
  Status result;
  std::thread runner([&] { result = (*jc)->Run(stop); });
  const bool all_done = handler.WaitAllDone(seconds(90));
  stop = true;
  runner.join();

  EXPECT_TRUE(all_done);
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_TRUE(handler.cancelled()) << "the job under the fatal error was not cancelled";
  EXPECT_EQ((*jc)->stats().replaced, 1);
  EXPECT_EQ((*jc)->stats().committed, kJobs);
  const std::vector<std::string> want = {"job-0", "job-1", "job-2", "job-2", "job-3", "job-4"};
  EXPECT_EQ(handler.ran(), want);
}

}  // namespace
}  // namespace ellm::ingest
