// The job-queue tests' fixture (job_queue_test.cc, exactly_once_test.cc):
// a temporary inbox and store, daemons started from a DaemonConfig, a
// producer of job messages on a topic of the test's own, and SQL counts.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_harness.h"
#include "ellm/ingest/kafka.h"
#include "test_env.h"

namespace ellm::testing {

class JobQueue : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("ellm-jobqueue");
    inbox_ = dir_ + "/inbox";
    std::filesystem::create_directories(inbox_);
    std::ofstream(inbox_ + "/report.txt") << "Revenue grew by four percent.\n\nCosts fell.\n";
    std::ofstream(inbox_ + "/blob.txt.gz", std::ios::binary) << std::string("\x1f\x8b\x08\x00", 4);
  }
  void TearDown() override {
    daemons_.clear();
    if (!HasFailure() && !std::getenv("ELLM_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_);
  }

  DaemonConfig Config(const std::string& brokers, const std::string& model,
                      const std::string& instance = "a") {
    return DaemonOn(brokers, model, topic_, dir_, inbox_, instance);
  }
  Daemon* Start(const DaemonConfig& c, const std::map<std::string, std::string>& env = {}) {
    daemons_.push_back(Daemon::Start(c, dir_, env));
    return daemons_.back().get();
  }
  // A valid job whose result event is to go to `reply_to`.
  std::string WithReplyTo(const std::string& id, const std::string& reply_to) {
    return R"({"id":")" + id + R"(","pipeline":"document-stats","reply_to":")" + reply_to +
           R"(","documents":[{"path":")" + inbox_ + R"(/report.txt"}]})";
  }
  std::string Job(const std::string& id, const std::string& params = "{}",
                  const std::string& doc = "") {
    std::string path = doc.empty() ? inbox_ + "/report.txt" : doc;
    return R"({"id":")" + id + R"(","pipeline":"document-stats","documents":[{"path":")" + path +
           R"("}],"params":)" + params + "}";
  }
  void Produce(const std::string& brokers, const std::string& key, const std::string& payload) {
    if (!producer_) {
      ingest::KafkaOptions o;
      o.brokers = brokers;
      auto p = ingest::KafkaProducer::Create(o);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      producer_ = std::move(p).value();
    }
    Status s = producer_->Produce(topic_, key, payload);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  int64_t Count(const std::string& sql) { return CountIn(dir_ + "/ellm.db", sql); }
  int64_t Succeeded() { return Count("SELECT count(*) FROM jobs WHERE status='succeeded'"); }
  std::string StatusOf(const std::string& id) {
    return std::to_string(
        Count("SELECT CASE status WHEN 'queued' THEN 0 WHEN 'running' THEN 1 "
              "WHEN 'succeeded' THEN 2 ELSE 3 END FROM jobs WHERE id='" +
              id + "'"));
  }
  bool IsRunning(const std::string& id) {
    return Count("SELECT count(*) FROM jobs WHERE status='running' AND id='" + id + "'") == 1;
  }
  int64_t PublishedJobs() {
    return Count("SELECT count(DISTINCT job_id) FROM events WHERE kind='published'");
  }
  // Every job has exactly one result row and its result event was
  // published: exactly once when no process was killed, at least once
  // otherwise (a kill between the broker's ack and the store's record of it
  // repeats the event; consumers deduplicate by job id).
  void ExpectExactlyOnce(int jobs, bool events_exactly_once = true) {
    EXPECT_EQ(Count("SELECT count(*) FROM jobs"), jobs);
    EXPECT_EQ(Succeeded(), jobs);
    EXPECT_EQ(Count("SELECT count(*) FROM results"), jobs);
    EXPECT_EQ(PublishedJobs(), jobs);
    if (events_exactly_once) {
      EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind='published'"), jobs);
    }
  }

  // A broker just started may take a while to give a producer its id: warm
  // up on another topic, so that no job message times out (a retry could
  // send one twice, which is no longer the same job). Leaves producer_ set.
  bool WarmUpProducer(const std::string& brokers) {
    return WaitFor(
        [&] {
          if (!producer_) {
            ingest::KafkaOptions o;
            o.brokers = brokers;
            auto p = ingest::KafkaProducer::Create(o);
            if (!p.ok()) return false;
            producer_ = std::move(p).value();
          }
          return producer_->Produce(topic_ + ".warmup", "w", "w").ok();
        },
        std::chrono::seconds(120));
  }
  // The ids that any of `queries` (each SELECT group_concat(...) of ids)
  // lists in any of the stores.
  static std::set<std::string> IdsInStores(const std::vector<std::string>& stores,
                                           const std::vector<std::string>& queries) {
    std::set<std::string> ids;
    for (const std::string& store : stores) {
      for (const std::string& sql : queries) {
        std::stringstream list(TextIn(store, sql));
        for (std::string id; std::getline(list, id, ',');) ids.insert(id);
      }
    }
    return ids;
  }

  std::string dir_, inbox_;
  std::string topic_ = UniqueName("ellm-jobs");
  std::vector<std::unique_ptr<Daemon>> daemons_;
  std::unique_ptr<ingest::KafkaProducer> producer_;
};

// A broker of this test's own (scripts/kafka on another port), so that
// stopping it does not disturb the tests sharing the main one.
class PrivateBroker {
 public:
  PrivateBroker(const std::string& run_dir, int port) : run_dir_(run_dir), port_(port) {}
  ~PrivateBroker() { (void)Kafka("stop"); }
  // Runs `scripts/kafka <verb>` for this broker; true on success.
  bool Kafka(const std::string& verb) {
    std::string cmd = "ELLM_KAFKA_PORT=" + std::to_string(port_) + " ELLM_KAFKA_RUN='" + run_dir_ +
                      "' '" + SourceDir() + "/scripts/kafka' " + verb + " >>'" + run_dir_ +
                      ".out' 2>&1";
    return std::system(cmd.c_str()) == 0;
  }
  std::string brokers() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::string run_dir_;
  int port_;
};

}  // namespace ellm::testing
