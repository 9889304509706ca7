// The job queue end to end: real `ellmd` processes consume a real broker's
// topic and store into a real SQLite file, with the `document-stats`
// pipeline. What is checked is the queue's promise: every job ends as
// exactly one result or one failure, whatever happens in between.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon_harness.h"
#include "ellm/ingest/kafka.h"
#include "http_get.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

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
    DaemonConfig c;
    c.model_path = model;
    c.brokers = brokers;
    c.topic = topic_;
    c.results_topic = topic_ + ".results";
    c.dead_letter_topic = topic_ + ".dlq";
    c.group = topic_ + "-group";
    c.instance = instance;
    c.store_path = dir_ + "/ellm.db";
    c.inbox = inbox_;
    return c;
  }
  Daemon* Start(const DaemonConfig& c, const std::map<std::string, std::string>& env = {}) {
    daemons_.push_back(Daemon::Start(c, dir_, env));
    return daemons_.back().get();
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

  std::string dir_, inbox_;
  std::string topic_ = UniqueName("ellm-jobs");
  std::vector<std::unique_ptr<Daemon>> daemons_;
  std::unique_ptr<ingest::KafkaProducer> producer_;
};

TEST_F(JobQueue, TwoHundredJobsGiveTwoHundredResultsExactlyOnce) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 2));
  const int kJobs = std::getenv("ELLM_TEST_JOBS") ? std::atoi(std::getenv("ELLM_TEST_JOBS")) : 200;
  for (int i = 0; i < kJobs; ++i)
    Produce(brokers, "j" + std::to_string(i), Job("j" + std::to_string(i)));
  Daemon* d = Start(Config(brokers, model));
  EXPECT_TRUE(WaitFor([&] { return Succeeded() == kJobs; }, seconds(180))) << d->Log();
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(60)), 0) << d->Log();
  ExpectExactlyOnce(kJobs);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE attempts = 1"), kJobs);
  auto events = ReadTopic(brokers, topic_ + ".results", seconds(3));
  std::set<std::string> ids;
  for (const auto& e : events) ids.insert(e.key);
  EXPECT_EQ(events.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(ids.size(), static_cast<size_t>(kJobs));
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events[0].payload.find(R"("status":"succeeded")"), std::string::npos)
      << events[0].payload;
}

TEST_F(JobQueue, KilledMidJobRunsItAgainAndStoresOneResult) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  Produce(brokers, "slow", Job("slow", R"({"hold_ms":4000})"));
  Produce(brokers, "next", Job("next"));
  DaemonConfig c = Config(brokers, model);
  Daemon* first = Start(c);
  ASSERT_TRUE(WaitFor([&] { return IsRunning("slow"); }, seconds(60))) << first->Log();
  std::this_thread::sleep_for(milliseconds(500));
  first->Signal(SIGKILL);
  EXPECT_EQ(first->Wait(seconds(10)), 128 + SIGKILL);
  EXPECT_EQ(Succeeded(), 0);

  Daemon* second = Start(c);  // same group.instance.id: gets the partition back at once
  EXPECT_TRUE(WaitFor([&] { return Succeeded() == 2 && PublishedJobs() == 2; }, seconds(60)))
      << second->Log();
  second->Signal(SIGTERM);
  EXPECT_EQ(second->Wait(seconds(30)), 0);
  ExpectExactlyOnce(2);
  EXPECT_EQ(Count("SELECT attempts FROM jobs WHERE id='slow'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE job_id='slow' AND kind='started'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE job_id='slow' AND kind='interrupted'"), 1);
}

TEST_F(JobQueue, TwoConsumersShareFourPartitionsAndSurviveAKill) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 4));
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) {
    Produce(brokers, "t" + std::to_string(i), Job("t" + std::to_string(i), R"({"hold_ms":250})"));
  }
  DaemonConfig ca = Config(brokers, model, "a"), cb = Config(brokers, model, "b");
  ca.session_timeout_ms = cb.session_timeout_ms = 3000;
  Daemon* a = Start(ca);
  Daemon* b = Start(cb);
  auto started_by = [&](const std::string& who) {
    return Count("SELECT count(*) FROM events WHERE kind='started' AND detail LIKE '% by " + who +
                 "/%'");
  };
  ASSERT_TRUE(WaitFor([&] { return started_by("a") >= 2 && started_by("b") >= 2; }, seconds(60)))
      << a->Log() << b->Log();
  b->Signal(SIGKILL);
  EXPECT_EQ(b->Wait(seconds(10)), 128 + SIGKILL);
  // b's partitions reach a after the session timeout; a then finishes what b
  // left, including publishing the event of a job b stored but did not publish.
  EXPECT_TRUE(
      WaitFor([&] { return Succeeded() == kJobs && PublishedJobs() == kJobs; }, seconds(180)))
      << a->Log();
  a->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(seconds(30)), 0);
  ExpectExactlyOnce(kJobs, /*events_exactly_once=*/false);
  EXPECT_GT(started_by("a"), 2);
}

TEST_F(JobQueue, PoisonMessagesFailAndAreDeadLetteredWhileGoodJobsComplete) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  struct Poison {
    std::string key, payload, id, code;
  };
  std::vector<Poison> poison = {
      {"", "this is not JSON {", "invalid:" + topic_ + ":0:1", "invalid_json"},
      {"no-docs", R"({"id":"no-docs","pipeline":"document-stats"})", "no-docs", "invalid_message"},
      {"outside", Job("outside", "{}", "/etc/hostname"), "outside", "path_not_allowed"},
      {"missing", Job("missing", "{}", inbox_ + "/nope.pdf"), "missing", "document_not_found"},
      {"unknown", R"({"id":"unknown","pipeline":"translate","documents":[{"path":"/x"}]})",
       "unknown", "unknown_pipeline"},
      {"binary", Job("binary", "{}", inbox_ + "/blob.txt.gz"), "binary",
       "document.unsupported_type"},
  };
  Produce(brokers, "good1", Job("good1"));
  for (const Poison& p : poison) Produce(brokers, p.key, p.payload);
  Produce(brokers, "good2", Job("good2"));
  Daemon* d = Start(Config(brokers, model));
  const int total = static_cast<int>(poison.size()) + 2;
  EXPECT_TRUE(WaitFor(
      [&] {
        return Count("SELECT count(*) FROM jobs WHERE status IN ('succeeded','failed')") == total;
      },
      seconds(60)))
      << d->Log();
  EXPECT_EQ(StatusOf("good1"), "2");
  EXPECT_EQ(StatusOf("good2"), "2");
  for (const Poison& p : poison) {
    EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE status='failed' AND id='" + p.id +
                    "' AND error_code='" + p.code + "'"),
              1)
        << p.id << " should fail with " << p.code;
  }
  auto dead = ReadTopic(brokers, topic_ + ".dlq", seconds(3));
  ASSERT_EQ(dead.size(), poison.size());
  for (size_t i = 0; i < dead.size(); ++i) {
    EXPECT_EQ(dead[i].payload, poison[i].payload) << "the dead-letter copy keeps the bytes";
    std::map<std::string, std::string> h(dead[i].headers.begin(), dead[i].headers.end());
    EXPECT_EQ(h["ellm.error.code"], poison[i].code);
    EXPECT_FALSE(h["ellm.error.message"].empty());
    EXPECT_EQ(h["ellm.job_id"], poison[i].id);
  }
  auto results = ReadTopic(brokers, topic_ + ".results", seconds(3));
  EXPECT_EQ(results.size(), size_t(total)) << "every job, failed or not, has a result event";
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0);
}

// Issue 37: an event the producer or broker refuses for good (here a result
// event larger than the producer's message.max.bytes) ends its job as
// publish_failed after jobs.max_publish_attempts (5), its result kept; a bad
// message too large to copy is dead-lettered as a reference to the
// original; and the jobs behind both on the same partition complete.
TEST_F(JobQueue, AnUndeliverableResultEventDoesNotBlockThePartition) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  std::string docs;
  for (int i = 0; i < 20; ++i) {
    docs += std::string(i ? "," : "") + R"({"path":")" + inbox_ + R"(/report.txt"})";
  }
  Produce(brokers, "good1", Job("good1"));
  Produce(brokers, "big", R"({"id":"big","pipeline":"document-stats","documents":[)" + docs + "]}");
  // A bad message too large to copy to the dead-letter topic: a reference goes.
  const std::string huge =
      R"({"id":"huge","pipeline":"document-stats","junk":")" + std::string(6000, 'x') + "\"}";
  Produce(brokers, "huge", huge);
  Produce(brokers, "good2", Job("good2"));
  DaemonConfig c = Config(brokers, model);
  c.kafka_properties["message.max.bytes"] = "2500";  // the big job's event is ~5 KB
  Daemon* d = Start(c);
  EXPECT_TRUE(WaitFor([&] { return StatusOf("good2") == "2"; }, seconds(120))) << d->Log();
  EXPECT_EQ(StatusOf("good1"), "2");
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='big' AND status='failed' AND "
                  "error_code='publish_failed' AND error_message LIKE '%" +
                  topic_ + ".results%'"),
            1)
      << d->Log();
  EXPECT_EQ(Count("SELECT count(*) FROM results WHERE job_id='big'"), 1) << "the result is kept";
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE job_id='big' AND kind='publish_error'"), 5);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='huge' AND status='failed' AND "
                  "error_code='invalid_message'"),
            1);
  auto dead = ReadTopic(brokers, topic_ + ".dlq", seconds(3));
  ASSERT_EQ(dead.size(), 1u);
  const auto ref = nlohmann::json::parse(dead[0].payload, nullptr, false);
  EXPECT_EQ(ref.value("job_id", ""), "huge") << dead[0].payload;
  EXPECT_EQ(ref.value("original_bytes", 0), static_cast<int>(huge.size()));
  EXPECT_EQ(ref["source"].value("offset", -1), 2);
  std::map<std::string, std::string> h(dead[0].headers.begin(), dead[0].headers.end());
  EXPECT_EQ(h["ellm.payload"], "reference");
  auto results = ReadTopic(brokers, topic_ + ".results", seconds(3));
  EXPECT_EQ(results.size(), 3u) << "the good jobs' events and the huge one's failure";
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0);
}

TEST_F(JobQueue, JobLongerThanMaxPollIntervalCausesNoRebalance) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  Produce(brokers, "long", Job("long", R"({"hold_ms":7000})"));
  DaemonConfig c = Config(brokers, model);
  c.session_timeout_ms = 2000;
  c.max_poll_interval_ms = 2000;
  Daemon* d = Start(c);
  EXPECT_TRUE(WaitFor([&] { return Succeeded() == 1; }, seconds(60))) << d->Log();
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0);
  // Closing the consumer revokes its partitions; before that, nothing may.
  std::string log = d->Log();
  std::string running = log.substr(0, log.find("stage=Draining"));
  EXPECT_EQ(running.find("revoked"), std::string::npos) << log;
  EXPECT_EQ(running.find("lost"), std::string::npos) << log;
  EXPECT_EQ(Count("SELECT attempts FROM jobs WHERE id='long'"), 1);
  ExpectExactlyOnce(1);
}

TEST_F(JobQueue, CrashBetweenStoreCommitAndOffsetCommitGivesNoDuplicate) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  Produce(brokers, "c1", Job("c1"));
  DaemonConfig c = Config(brokers, model);
  Daemon* crashing = Start(c, {{"ELLM_TEST_CRASH_AFTER_STORE", "1"}});
  EXPECT_EQ(crashing->Wait(seconds(60)), 128 + SIGKILL) << crashing->Log();
  EXPECT_EQ(Succeeded(), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind='published'"), 0);

  Daemon* d = Start(c);
  EXPECT_TRUE(
      WaitFor([&] { return Count("SELECT count(*) FROM events WHERE kind='published'") == 1; },
              seconds(60)))
      << d->Log();
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0);
  ExpectExactlyOnce(1);
  EXPECT_EQ(Count("SELECT attempts FROM jobs WHERE id='c1'"), 1) << "not run again";
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE job_id='c1' AND kind='duplicate'"), 1);
  EXPECT_EQ(ReadTopic(brokers, topic_ + ".results", seconds(3)).size(), 1u);
}

// A document that kills the process mid-inference (issue 37 item 4): each
// restart (what systemd's Restart=on-failure does) runs it again until
// jobs.max_attempts starts are used up; the next start fails it as
// attempts_exhausted and dead-letters it without running it, and the job
// behind it on the same partition completes.
TEST_F(JobQueue, AJobThatKillsTheDaemonFailsAfterMaxAttemptsAndTheNextCompletes) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  Produce(brokers, "boom",
          R"({"id":"boom","pipeline":"summarize-report","documents":[{"path":")" + inbox_ +
              R"(/report.txt"}],"params":{}})");
  Produce(brokers, "after", Job("after"));
  DaemonConfig c = Config(brokers, model);
  ASSERT_EQ(c.max_attempts, 3);
  int crashes = 0;
  for (int start = 0; start < 6 && Succeeded() < 1; ++start) {  // -1: no store yet
    Daemon* d = Start(c, {{"ELLM_TEST_CRASH_IN_JOB", "boom"}});
    bool done = WaitFor([&] { return !d->Running() || Succeeded() == 1; }, seconds(90));
    ASSERT_TRUE(done) << d->Log();
    if (!d->Running()) {
      EXPECT_EQ(d->Wait(seconds(5)), 128 + SIGKILL) << d->Log();
      ++crashes;
      continue;
    }
    d->Signal(SIGTERM);
    EXPECT_EQ(d->Wait(seconds(30)), 0) << d->Log();
  }
  EXPECT_EQ(crashes, 3);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='boom' AND status='failed' AND "
                  "error_code='attempts_exhausted' AND attempts=3"),
            1);
  EXPECT_EQ(StatusOf("after"), "2");
  auto dead = ReadTopic(brokers, topic_ + ".dlq", seconds(3));
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].key, "boom");
}

TEST_F(JobQueue, SigtermLetsTheRunningJobFinishAndCommits) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  Produce(brokers, "g1", Job("g1", R"({"hold_ms":2500})"));
  DaemonConfig c = Config(brokers, model);
  Daemon* d = Start(c);
  ASSERT_TRUE(WaitFor([&] { return IsRunning("g1"); }, seconds(60))) << d->Log();
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0) << d->Log();
  EXPECT_EQ(StatusOf("g1"), "2");

  // The offset was committed before exit: a new run does not see g1 again.
  Produce(brokers, "g2", Job("g2"));
  Daemon* again = Start(c);
  EXPECT_TRUE(WaitFor([&] { return Succeeded() == 2; }, seconds(60))) << again->Log();
  again->Signal(SIGTERM);
  EXPECT_EQ(again->Wait(seconds(30)), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind='duplicate'"), 0);
  ExpectExactlyOnce(2);
}

TEST_F(JobQueue, SigtermAbandonsAJobThatOutlivesTheGracePeriod) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  Produce(brokers, "stuck", Job("stuck", R"({"hold_ms":600000})"));
  DaemonConfig c = Config(brokers, model);
  c.shutdown_grace_s = 1;
  Daemon* d = Start(c);
  ASSERT_TRUE(WaitFor([&] { return IsRunning("stuck"); }, seconds(60))) << d->Log();
  auto t0 = std::chrono::steady_clock::now();
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0) << d->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(15));
  EXPECT_EQ(Count("SELECT count(*) FROM results"), 0);
  // Cancelled, not crashed: queued again with its attempt given back, for
  // the next start (issue 37: a cancellation does not use up an attempt).
  EXPECT_EQ(StatusOf("stuck"), "0") << d->Log();
  EXPECT_EQ(Count("SELECT attempts FROM jobs WHERE id='stuck'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE job_id='stuck' AND kind='cancelled'"), 1);
}

TEST_F(JobQueue, SighupReloadsPipelinesAndKeepsThemWhenAFileIsBroken) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  std::string defs = dir_ + "/pipelines";
  std::filesystem::create_directories(defs);
  std::filesystem::copy_file(SourceDir() + "/pipelines/defs/summarize-report.yaml",
                             defs + "/summarize-report.yaml");
  DaemonConfig c = Config(brokers, model);
  c.pipelines_dir = defs;
  Daemon* d = Start(c);
  auto job = [&](const std::string& id) {
    return R"({"id":")" + id + R"(","pipeline":"notes","documents":[{"path":")" + inbox_ +
           R"(/report.txt"}]})";
  };
  Produce(brokers, "n1", job("n1"));
  ASSERT_TRUE(WaitFor([&] { return StatusOf("n1") == "3"; }, seconds(60))) << d->Log();
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='n1' AND error_code='unknown_pipeline'"), 1);

  std::ofstream(defs + "/notes.yaml") << R"(name: notes
version: "1"
prompt: "{{document}}\n\nIn one sentence:"
generation: {max_tokens: 16}
)";
  d->Signal(SIGHUP);
  std::this_thread::sleep_for(milliseconds(300));  // the signal thread sets the flag
  Produce(brokers, "n2", job("n2"));
  EXPECT_TRUE(WaitFor([&] { return StatusOf("n2") == "2"; }, seconds(60))) << d->Log();

  std::ofstream(defs + "/broken.yaml") << "name: [unclosed\n";
  d->Signal(SIGHUP);
  std::this_thread::sleep_for(milliseconds(300));
  Produce(brokers, "n3", job("n3"));
  EXPECT_TRUE(WaitFor([&] { return StatusOf("n3") == "2"; }, seconds(60))) << d->Log();
  EXPECT_NE(d->Log().find("keeping the current pipelines"), std::string::npos);
  EXPECT_NE(d->Log().find("broken.yaml"), std::string::npos);
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0);
}

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

TEST_F(JobQueue, BrokerAwayAtStartAndMidRunLosesAndDuplicatesNothing) {
  // The shared broker being up shows that Java and the broker's jars are here.
  ELLM_REQUIRE_KAFKA(shared_brokers);
  ELLM_REQUIRE_MODEL(model);
  PrivateBroker broker(dir_ + "/kafka", 19192);
  ASSERT_TRUE(broker.Kafka("start"));
  const std::string brokers = broker.brokers();
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  constexpr int kJobs = 30;
  // The second outage starts while b6 runs; b6 ends 2.5 s into the 8 s
  // outage, so its result event is always in flight while the broker is
  // away (a fixed point in the run, not a race with the halt).
  constexpr int kCaught = 6;
  for (int i = 0; i < kJobs; ++i) {
    const std::string id = "b" + std::to_string(i);
    Produce(brokers, id, Job(id, i == kCaught ? R"({"hold_ms":2500})" : R"({"hold_ms":150})"));
  }
  producer_.reset();
  // The daemon starts while the broker is away: it waits, it does not fail.
  ASSERT_TRUE(broker.Kafka("halt"));
  DaemonConfig config = Config(brokers, model);
  // Shorter than the outage below, so a result event in flight times out
  // inside librdkafka and the job comes round again to send it.
  config.kafka_properties["message.timeout.ms"] = "5000";
  Daemon* d = Start(config);
  std::this_thread::sleep_for(seconds(3));
  EXPECT_TRUE(d->Running()) << d->Log();
  ASSERT_TRUE(broker.Kafka("resume"));
  ASSERT_TRUE(WaitFor([&] { return StatusOf("b" + std::to_string(kCaught)) == "1"; }, seconds(90)))
      << d->Log();
  ASSERT_TRUE(broker.Kafka("halt"));
  EXPECT_LT(Succeeded(), kJobs) << "the outage starts mid-run";
  std::this_thread::sleep_for(seconds(8));  // longer than the session timeout
  EXPECT_TRUE(d->Running()) << "the daemon rides out the outage";
  ASSERT_TRUE(broker.Kafka("resume"));
  EXPECT_TRUE(
      WaitFor([&] { return Count("SELECT count(*) FROM events WHERE kind='published'") == kJobs; },
              seconds(240)))
      << d->Log();
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(60)), 0) << d->Log();
  ExpectExactlyOnce(kJobs);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE attempts = 1"), kJobs);
  EXPECT_NE(d->Log().find("result event not published yet"), std::string::npos)
      << "no result event waited out the outage, so its retry went untested";
}

// Issue 37 item 2: exactly-once results across hosts. Two daemons with
// separate stores share a 4-partition jobs topic; whichever runs job
// kVictim is SIGKILLed right after its result event was acknowledged and
// before its offset was committed (ELLM_TEST_KILL_AFTER_PUBLISH), which is
// where at-least-once repeats a result. The survivor takes the partition
// over and runs the job again (its store does not know it); the victim
// restarts. With kafka.transactions a read_committed reader of the results
// topic sees every job id exactly once, and the published events recorded
// in the two stores add up to one per job. `broker` may halt the broker
// (scripts/kafka halt / resume) mid-run: the nightly variant's outage.
// The job whose first publication is killed: early in its partition, so
// that the kill comes early in the run.
constexpr const char* kVictim = "x1";

struct KillAfterPublishRun {
  int jobs = 40;
  int hold_ms = 50;  // each job's run time (document-stats' hold_ms)
  bool transactions = true;
  std::function<bool(const std::string&)> kafka;  // scripts/kafka verb; empty: no outage
};

class ExactlyOnce : public JobQueue {
 protected:
  // Results read back (read_committed), keyed by job id: how often each came.
  std::map<std::string, int> RunKillAfterPublish(const std::string& brokers,
                                                 const std::string& model,
                                                 const KillAfterPublishRun& run) {
    std::map<std::string, int> seen;
    EXPECT_TRUE(CreateTopic(brokers, topic_, 4));
    EXPECT_TRUE(CreateTopic(brokers, topic_ + ".results", 4));
    const std::string victim = kVictim;
    // A broker just started may take a while to give the producer its id:
    // warm up on another topic, so that no job message times out (a retry
    // could send one twice, which is no longer the same job).
    bool warm = WaitFor(
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
        seconds(120));
    EXPECT_TRUE(warm);
    for (int i = 0; i < run.jobs; ++i) {
      const std::string id = "x" + std::to_string(i);
      Produce(brokers, id, Job(id, R"({"hold_ms":)" + std::to_string(run.hold_ms) + "}"));
    }
    producer_.reset();
    DaemonConfig ca = Config(brokers, model, "a");
    DaemonConfig cb = Config(brokers, model, "b");
    ca.store_path = dir_ + "/a.db";
    cb.store_path = dir_ + "/b.db";
    ca.session_timeout_ms = cb.session_timeout_ms = 3000;
    ca.transactions = cb.transactions = run.transactions;
    if (run.kafka) {
      // Outlives the outage, as in BrokerAwayAtStartAndMidRunLosesAndDuplicatesNothing.
      ca.kafka_properties["message.timeout.ms"] = cb.kafka_properties["message.timeout.ms"] =
          "5000";
    }
    // Whichever daemon publishes `victim` first is killed; not the other.
    const std::map<std::string, std::string> env = {
        {"ELLM_TEST_KILL_AFTER_PUBLISH", victim},
        {"ELLM_TEST_AFTER_PUBLISH_ONCE", dir_ + "/killed-once"}};
    Daemon* a = Start(ca, env);
    Daemon* b = Start(cb, env);
    auto in = [](const DaemonConfig& c, const std::string& sql) {
      return CountIn(c.store_path, sql);
    };
    auto succeeded = [&](const DaemonConfig& c, const std::string& id) {
      return in(c, "SELECT count(*) FROM jobs WHERE status='succeeded' AND id='" + id + "'") == 1;
    };
    auto published = [&] {
      const std::string sql = "SELECT count(*) FROM events WHERE kind='published'";
      return std::max<int64_t>(in(ca, sql), 0) + std::max<int64_t>(in(cb, sql), 0);
    };
    // The jobs published by one store or the other.
    auto published_ids = [&] {
      std::set<std::string> ids;
      for (const DaemonConfig* c : {&ca, &cb}) {
        std::stringstream list(
            TextIn(c->store_path,
                   "SELECT group_concat(DISTINCT job_id) FROM events WHERE kind='published'"));
        for (std::string id; std::getline(list, id, ',');) ids.insert(id);
      }
      return ids.size();
    };
    bool killed = WaitFor([&] { return !a->Running() || !b->Running(); }, seconds(180));
    EXPECT_TRUE(killed) << a->Log() << b->Log();
    if (!killed) return seen;
    const bool a_died = !a->Running();
    Daemon* dead = a_died ? a : b;
    Daemon* survivor = a_died ? b : a;
    const DaemonConfig& dead_config = a_died ? ca : cb;
    const DaemonConfig& survivor_config = a_died ? cb : ca;
    EXPECT_EQ(dead->Wait(seconds(10)), 128 + SIGKILL) << dead->Log();
    EXPECT_TRUE(succeeded(dead_config, victim)) << "killed after the job was stored";
    // The survivor gets the partition after the session timeout and runs the
    // job again: its own store has never heard of it.
    EXPECT_TRUE(WaitFor([&] { return succeeded(survivor_config, victim); }, seconds(90)))
        << survivor->Log();
    Daemon* restarted = Start(dead_config);  // no fault this time
    if (run.kafka) {
      // The outage comes once a quarter of the jobs are out, and lasts
      // longer than the session timeout.
      EXPECT_TRUE(WaitFor([&] { return published_ids() >= static_cast<size_t>(run.jobs / 4); },
                          seconds(120)))
          << survivor->Log() << restarted->Log();
      EXPECT_LT(published_ids(), static_cast<size_t>(run.jobs)) << "the outage starts mid-run";
      EXPECT_TRUE(run.kafka("halt"));
      std::this_thread::sleep_for(seconds(8));
      EXPECT_TRUE(survivor->Running() && restarted->Running()) << "the daemons ride out the outage";
      EXPECT_TRUE(run.kafka("resume"));
    }
    EXPECT_TRUE(
        WaitFor([&] { return published_ids() == static_cast<size_t>(run.jobs); }, seconds(180)))
        << survivor->Log() << restarted->Log();
    survivor->Signal(SIGTERM);
    restarted->Signal(SIGTERM);
    EXPECT_EQ(survivor->Wait(seconds(60)), 0) << survivor->Log();
    EXPECT_EQ(restarted->Wait(seconds(60)), 0) << restarted->Log();
    if (run.transactions) {
      EXPECT_EQ(published(), run.jobs) << "the stores' published events add up to one per job";
    }
    for (const auto& m : ReadTopic(brokers, topic_ + ".results", seconds(3))) ++seen[m.key];
    return seen;
  }
  static int Repeated(const std::map<std::string, int>& seen) {
    int n = 0;
    for (const auto& [id, count] : seen) n += count > 1;
    return n;
  }
};

TEST_F(ExactlyOnce, TwoDaemonsWithSeparateStoresPublishEachJobOnceAcrossAKill) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  KillAfterPublishRun run;
  run.jobs = 40;
  const std::map<std::string, int> seen = RunKillAfterPublish(brokers, model, run);
  EXPECT_EQ(seen.size(), static_cast<size_t>(run.jobs));
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << id;
}

// The control (nightly): the same run without transactions repeats the
// victim's result (its first event was out before the kill), which is what
// the test above proves cannot happen with them.
TEST_F(ExactlyOnce, WithoutTransactionsTheSameKillRepeatsAResult) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  KillAfterPublishRun run;
  run.jobs = 40;
  run.transactions = false;
  const std::map<std::string, int> seen = RunKillAfterPublish(brokers, model, run);
  EXPECT_EQ(seen.size(), static_cast<size_t>(run.jobs));
  EXPECT_GE(Repeated(seen), 1);
  EXPECT_GE(seen.count(kVictim) ? seen.at(kVictim) : 0, 2);
}

// The issue's full run (nightly: a minute alone, several beside other
// tests, with a broker of its own to start): 200 jobs, the kill after a
// publish and a broker outage longer than the session timeout, on a broker
// of the test's own (PrivateBroker, the shared broker's port + 4, so that
// test runs against different shared brokers do not collide).
TEST_F(ExactlyOnce, TwoHundredJobsAcrossAKillAndABrokerOutageArePublishedOnce) {
  ELLM_REQUIRE_KAFKA(shared_brokers);
  ELLM_REQUIRE_MODEL(model);
  const int port = std::atoi(shared_brokers.substr(shared_brokers.rfind(':') + 1).c_str()) + 4;
  PrivateBroker broker(dir_ + "/kafka", port);
  ASSERT_TRUE(broker.Kafka("start"));
  KillAfterPublishRun run;
  run.jobs = 200;
  run.hold_ms = 200;  // 20 s of work at least: the outage comes mid-run
  run.kafka = [&](const std::string& verb) { return broker.Kafka(verb); };
  const std::map<std::string, int> seen = RunKillAfterPublish(broker.brokers(), model, run);
  EXPECT_EQ(seen.size(), static_cast<size_t>(run.jobs));
  EXPECT_EQ(Repeated(seen), 0);
}

// Issue 37's chaos run (nightly: minutes): two hosts' daemons with
// separate stores on a broker of the test's own (the shared broker's port +
// 5), four partitions; 500 good jobs with 20 hostile messages of eleven
// kinds and 5 jobs that outlive their timeout_s among them; each daemon
// SIGKILLed once mid-run and restarted; a broker halt of 40 s. A
// read_committed reader of the results sees every job once (but those
// whose result event is larger than the producer takes: publish_failed, no
// event), each good one succeeded in some store; every hostile and
// timed-out one failed with its code and was dead-lettered once (a message
// too large to copy as a reference). Prints the run's duration.
TEST_F(ExactlyOnce, ChaosAcrossTwoHostsLosesAndRepeatsNothing) {
  ELLM_REQUIRE_KAFKA(shared_brokers);
  ELLM_REQUIRE_MODEL(model);
  const auto started = std::chrono::steady_clock::now();
  const int port = std::atoi(shared_brokers.substr(shared_brokers.rfind(':') + 1).c_str()) + 5;
  PrivateBroker broker(dir_ + "/kafka", port);
  ASSERT_TRUE(broker.Kafka("start"));
  const std::string brokers = broker.brokers();
  ASSERT_TRUE(CreateTopic(brokers, topic_, 4));
  ASSERT_TRUE(CreateTopic(brokers, topic_ + ".results", 4));
  ASSERT_TRUE(WaitFor(
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
      seconds(120)));

  // The hostile kinds: key, payload and the code each must fail with (an id
  // of "" is filed under invalid:<topic>:<partition>:<offset>).
  struct Hostile {
    std::string id, key, payload, code;
  };
  auto hostile = [&](int n) -> Hostile {
    const std::string id = "h" + std::to_string(n);
    switch (n % 11) {
      case 0:
        return {"", "", "not JSON {" + id, "invalid_json"};
      case 1:
        return {id, id, R"({"id":")" + id + R"(","pipeline":"document-stats"})", "invalid_message"};
      case 2:
        return {id, id,
                R"({"version":9,"id":")" + id +
                    R"(","pipeline":"document-stats","documents":[{"path":"/x"}]})",
                "unsupported_version"};
      case 3:
        return {id, id,
                R"({"id":")" + id + R"(","pipeline":"translate","documents":[{"path":"/x"}]})",
                "unknown_pipeline"};
      case 4:
        return {id, id, Job(id, "{}", "/etc/hostname"), "path_not_allowed"};
      case 5:
        return {id, id, Job(id, "{}", inbox_ + "/nope.pdf"), "document_not_found"};
      case 6:
        return {id, "someone-else", Job(id), "key_mismatch"};
      case 7:
        return {id, id, Job(id, "{}", inbox_ + "/blob.txt.gz"), "document.unsupported_type"};
      case 9: {
        // A result event past the daemons' message.max.bytes (2500).
        std::string docs;
        for (int i = 0; i < 20; ++i) {
          docs += std::string(i ? "," : "") + R"({"path":")" + inbox_ + R"(/report.txt"})";
        }
        return {id, id,
                R"({"id":")" + id + R"(","pipeline":"document-stats","documents":[)" + docs + "]}",
                "publish_failed"};
      }
      case 10:
        // Too large to copy to the dead-letter topic: a reference goes.
        return {id, id,
                R"({"id":")" + id + R"(","pipeline":"document-stats","junk":")" +
                    std::string(6000, 'x') + "\"}",
                "invalid_message"};
      default: {
        std::string bad = Job(id);
        bad.insert(bad.size() - 1, R"(,"reply_to":"not a topic!")");
        return {id, id, bad, "invalid_message"};
      }
    }
  };
  constexpr int kGood = 500, kHostile = 20, kSlow = 5;
  std::map<std::string, std::string> expected_code;  // failed ids (with one) -> code
  std::map<std::string, int> codes;                  // code -> how many
  int hostile_sent = 0, slow_sent = 0;
  for (int i = 0; i < kGood; ++i) {
    const std::string id = "g" + std::to_string(i);
    Produce(brokers, id, Job(id, R"({"hold_ms":50})"));
    if (i % 25 == 12 && hostile_sent < kHostile) {
      const Hostile h = hostile(hostile_sent++);
      Produce(brokers, h.key, h.payload);
      if (!h.id.empty()) expected_code[h.id] = h.code;
      ++codes[h.code];
    }
    if (i % 100 == 50 && slow_sent < kSlow) {
      const std::string sid = "slow" + std::to_string(slow_sent++);
      Produce(brokers, sid,
              R"({"id":")" + sid + R"(","pipeline":"document-stats","documents":[{"path":")" +
                  inbox_ + R"(/report.txt"}],"params":{"hold_ms":30000},"timeout_s":1})");
      expected_code[sid] = "deadline_exceeded";
      ++codes["deadline_exceeded"];
    }
  }
  producer_.reset();
  ASSERT_EQ(hostile_sent, kHostile);
  ASSERT_EQ(slow_sent, kSlow);
  const size_t total = kGood + kHostile + kSlow;

  DaemonConfig ca = Config(brokers, model, "a");
  DaemonConfig cb = Config(brokers, model, "b");
  ca.store_path = dir_ + "/a.db";
  cb.store_path = dir_ + "/b.db";
  ca.session_timeout_ms = cb.session_timeout_ms = 3000;
  ca.kafka_properties["message.max.bytes"] = cb.kafka_properties["message.max.bytes"] = "2500";
  Daemon* a = Start(ca);
  Daemon* b = Start(cb);
  const int undeliverable = codes["publish_failed"];
  // Jobs ended, in either store: a result event out, or publish_failed.
  auto ended = [&] {
    std::set<std::string> ids;
    for (const DaemonConfig* c : {&ca, &cb}) {
      for (const char* sql :
           {"SELECT group_concat(DISTINCT job_id) FROM events WHERE kind='published'",
            "SELECT group_concat(id) FROM jobs WHERE error_code='publish_failed'"}) {
        std::stringstream list(TextIn(c->store_path, sql));
        for (std::string id; std::getline(list, id, ',');) ids.insert(id);
      }
    }
    return ids.size();
  };
  // Jobs with a result event out, in either store.
  auto published = [&] {
    std::set<std::string> ids;
    for (const DaemonConfig* c : {&ca, &cb}) {
      std::stringstream list(
          TextIn(c->store_path,
                 "SELECT group_concat(DISTINCT job_id) FROM events WHERE kind='published'"));
      for (std::string id; std::getline(list, id, ',');) ids.insert(id);
    }
    return ids.size();
  };
  auto logs = [&] { return a->Log() + b->Log(); };
  // Each daemon killed once, a quarter and half-way through; the broker
  // halted for 40 s at three quarters.
  for (auto [at, which] : {std::pair{total / 4, 0}, std::pair{total / 2, 1}}) {
    ASSERT_TRUE(WaitFor([&] { return published() >= at; }, seconds(300))) << logs();
    Daemon*& victim = which == 0 ? a : b;
    victim->Signal(SIGKILL);
    EXPECT_EQ(victim->Wait(seconds(10)), 128 + SIGKILL);
    victim = Start(which == 0 ? ca : cb);
  }
  ASSERT_TRUE(WaitFor([&] { return published() >= total * 3 / 4; }, seconds(300))) << logs();
  ASSERT_TRUE(broker.Kafka("halt"));
  std::this_thread::sleep_for(seconds(40));
  EXPECT_TRUE(a->Running() && b->Running()) << "the daemons ride out the halt";
  ASSERT_TRUE(broker.Kafka("resume"));
  EXPECT_TRUE(WaitFor([&] { return ended() == total; }, seconds(600))) << logs();
  EXPECT_EQ(published(), total - undeliverable);
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(seconds(60)), 0) << a->Log();
  EXPECT_EQ(b->Wait(seconds(60)), 0) << b->Log();

  // The results: every job once.
  std::map<std::string, int> seen;
  for (const auto& m : ReadTopic(brokers, topic_ + ".results", seconds(5))) ++seen[m.key];
  EXPECT_EQ(seen.size(), total - undeliverable);
  EXPECT_EQ(Repeated(seen), 0);
  auto status_in_some_store = [&](const std::string& id) {
    std::set<std::string> statuses;
    for (const DaemonConfig* c : {&ca, &cb}) {
      const std::string st = TextIn(c->store_path, "SELECT status FROM jobs WHERE id='" + id + "'");
      if (!st.empty()) statuses.insert(st);
    }
    return statuses;
  };
  int good_ok = 0;
  for (int i = 0; i < kGood; ++i) {
    const std::string id = "g" + std::to_string(i);
    good_ok += seen[id] == 1 && status_in_some_store(id).count("succeeded") == 1;
  }
  EXPECT_EQ(good_ok, kGood);
  for (const auto& [id, code] : expected_code) {
    int64_t failed = 0;
    for (const DaemonConfig* c : {&ca, &cb}) {
      failed += std::max<int64_t>(0, CountIn(c->store_path, "SELECT count(*) FROM jobs WHERE id='" +
                                                                id + "' AND status='failed' AND " +
                                                                "error_code='" + code + "'"));
    }
    EXPECT_GE(failed, 1) << id << " should fail with " << code;
  }
  // The dead letters: one per hostile or timed-out message, with its code.
  std::map<std::string, int> dead_codes;
  std::set<std::string> dead_ids;
  const auto dead = ReadTopic(brokers, topic_ + ".dlq", seconds(5));
  for (const auto& m : dead) {
    std::map<std::string, std::string> h(m.headers.begin(), m.headers.end());
    ++dead_codes[h["ellm.error.code"]];
    dead_ids.insert(h["ellm.job_id"]);
  }
  // A publish_failed job's result is kept in the store, not dead-lettered.
  codes.erase("publish_failed");
  EXPECT_EQ(dead.size(), static_cast<size_t>(kHostile + kSlow - undeliverable));
  EXPECT_EQ(dead_ids.size(), dead.size()) << "no dead letter twice";
  EXPECT_EQ(dead_codes, codes);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "chaos run: %zu jobs (%d good, %d hostile of which %d undeliverable, %d timed out), "
      "2 kills, a 40 s broker halt: %.1f s\n",
      total, kGood, kHostile, undeliverable, kSlow, took);
}

// Issue 37 item 2, zombie fencing (KIP-447): daemon a is stopped (SIGSTOP,
// ELLM_TEST_STOP_AFTER_PUBLISH) right after z's result event went out in
// its transaction, before its offset commit. Past its session timeout b
// takes the partition over, runs z again (separate store) and commits. a
// is then continued: its commit carries the group generation of when z
// started, which the group has left behind, so the coordinator refuses it
// and the transaction, z's first result event with it, is aborted. A
// read_committed reader sees z once.
TEST_F(ExactlyOnce, AZombieWhosePartitionMovedCannotCommitItsResult) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  DaemonConfig ca = Config(brokers, model, "a"), cb = Config(brokers, model, "b");
  ca.store_path = dir_ + "/a.db";
  cb.store_path = dir_ + "/b.db";
  ca.session_timeout_ms = cb.session_timeout_ms = 3000;
  Daemon* a = Start(ca, {{"ELLM_TEST_STOP_AFTER_PUBLISH", "z"}});
  ASSERT_TRUE(WaitFor(
      [&] { return a->Log().find("kafka: assigned " + topic_) != std::string::npos; }, seconds(60)))
      << a->Log();
  Produce(brokers, "z", Job("z"));
  Produce(brokers, "after", Job("after"));
  ASSERT_TRUE(WaitFor([&] { return a->Stopped(); }, seconds(60))) << a->Log();
  Daemon* b = Start(cb);
  auto done_in_b = [&](const std::string& id) {
    return CountIn(cb.store_path,
                   "SELECT count(*) FROM events WHERE kind='published' AND job_id='" + id + "'") ==
           1;
  };
  EXPECT_TRUE(WaitFor([&] { return done_in_b("z") && done_in_b("after"); }, seconds(90)))
      << b->Log();
  a->Signal(SIGCONT);
  EXPECT_TRUE(
      WaitFor([&] { return a->Log().find("the transaction was aborted") != std::string::npos; },
              seconds(60)))
      << a->Log();
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(seconds(60)), 0) << a->Log();
  EXPECT_EQ(b->Wait(seconds(60)), 0) << b->Log();
  EXPECT_EQ(CountIn(ca.store_path, "SELECT count(*) FROM events WHERE kind='published'"), 0)
      << "the zombie's publication was never committed, so never recorded";
  std::map<std::string, int> seen;
  for (const auto& m : ReadTopic(brokers, topic_ + ".results", seconds(3))) ++seen[m.key];
  EXPECT_EQ(seen, (std::map<std::string, int>{{"after", 1}, {"z", 1}}));
}

// Issue 37: failures are transient or permanent. A failed fork of the
// extractor (injected once) leaves its job queued, and the consumer's retry
// succeeds on attempt 2; a job that outlives its message's timeout_s fails
// at once with deadline_exceeded and is dead-lettered; the job behind both
// on the same partition completes, and the metrics count one failure of
// each kind.
TEST_F(JobQueue, TransientFailuresAreRetriedAndDeadlinesFailJobsForGood) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  std::filesystem::copy_file(SourceDir() + "/tests/data/pdf/ligatures.pdf", inbox_ + "/r.pdf");
  const std::string slow = R"({"id":"slow","pipeline":"document-stats","documents":[{"path":")" +
                           inbox_ + R"(/report.txt"}],"params":{"hold_ms":30000},"timeout_s":1})";
  Produce(brokers, "flaky", Job("flaky", "{}", inbox_ + "/r.pdf"));
  Produce(brokers, "slow", slow);
  Produce(brokers, "good", Job("good"));
  DaemonConfig c = Config(brokers, model);
  c.metrics = true;
  Daemon* d = Start(c, {{"ELLM_TEST_FAIL_EXTRACTOR_FORKS", "1"}});
  EXPECT_TRUE(WaitFor(
      [&] {
        return Count("SELECT count(*) FROM jobs WHERE status IN ('succeeded','failed')") == 3 &&
               PublishedJobs() == 3;
      },
      seconds(45)))
      << d->Log();
  EXPECT_EQ(StatusOf("flaky"), "2");
  EXPECT_EQ(Count("SELECT attempts FROM jobs WHERE id='flaky'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE job_id='flaky' AND kind='transient_error' "
                  "AND detail LIKE 'attempt 1: unavailable: %fork of the extractor%'"),
            1);
  EXPECT_EQ(StatusOf("slow"), "3");
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='slow' AND error_code='deadline_exceeded' "
                  "AND error_message LIKE '%limit of 1 s (the message''s timeout_s)%'"),
            1);
  EXPECT_EQ(Count("SELECT attempts FROM jobs WHERE id='slow'"), 1);
  EXPECT_EQ(StatusOf("good"), "2");

  auto dead = ReadTopic(brokers, topic_ + ".dlq", seconds(3));
  ASSERT_EQ(dead.size(), 1u) << "only the permanent failure is dead-lettered";
  std::map<std::string, std::string> h(dead[0].headers.begin(), dead[0].headers.end());
  EXPECT_EQ(h["ellm.job_id"], "slow");
  EXPECT_EQ(h["ellm.error.code"], "deadline_exceeded");
  EXPECT_EQ(dead[0].payload, slow);

  HttpResponse metrics = HttpRequest(d->MetricsPort(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find(R"(ellm_job_failures_total{kind="transient"} 1)"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(R"(ellm_job_failures_total{kind="permanent"} 1)"), std::string::npos)
      << metrics.body;
  d->Signal(SIGTERM);
  EXPECT_EQ(d->Wait(seconds(30)), 0);
}

// Issue 37 item 8: a PDF whose extractor opens a socket or a file for
// writing (the test hook ELLM_TEST_EXTRACTOR_MISBEHAVE, acted on inside the
// extractor's seccomp sandbox) is killed; its job fails for good with
// document.sandbox_violation on the first attempt and is dead-lettered,
// and a text job (no extractor) beside it completes.
TEST_F(JobQueue, AnExtractorBreakingItsSandboxFailsTheJobForGood) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  std::filesystem::copy_file(SourceDir() + "/tests/data/pdf/ligatures.pdf", inbox_ + "/r.pdf");
  std::filesystem::remove("/tmp/ellm-extract-sandbox-escape");
  for (const char* misbehaviour : {"socket", "write"}) {
    SCOPED_TRACE(misbehaviour);
    const std::string id = std::string("escape-") + misbehaviour;
    Produce(brokers, id, Job(id, "{}", inbox_ + "/r.pdf"));
    Produce(brokers, id + "-text", Job(id + "-text"));
    Daemon* d = Start(Config(brokers, model), {{"ELLM_TEST_EXTRACTOR_MISBEHAVE", misbehaviour}});
    EXPECT_TRUE(WaitFor(
        [&] {
          return Count(
                     "SELECT count(*) FROM jobs WHERE status IN ('succeeded','failed') AND id "
                     "LIKE '" +
                     id + "%'") == 2;
        },
        seconds(45)))
        << d->Log();
    EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='" + id +
                    "' AND status='failed' AND error_code='document.sandbox_violation' AND "
                    "error_message LIKE '%forbidden system call%' AND attempts=1"),
              1)
        << d->Log();
    EXPECT_EQ(StatusOf(id + "-text"), "2");
    d->Signal(SIGTERM);
    EXPECT_EQ(d->Wait(seconds(30)), 0);
    daemons_.clear();
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/ellm-extract-sandbox-escape"));
  auto dead = ReadTopic(brokers, topic_ + ".dlq", seconds(3));
  ASSERT_EQ(dead.size(), 2u);
  for (const auto& m : dead) {
    std::map<std::string, std::string> h(m.headers.begin(), m.headers.end());
    EXPECT_EQ(h["ellm.error.code"], "document.sandbox_violation");
  }
}

}  // namespace
}  // namespace ellm::testing
