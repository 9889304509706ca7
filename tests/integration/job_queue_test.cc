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
#include "job_queue_fixture.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

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
      // Issue 53: params nested past any stack (200,000 levels: the message
      // stays below the broker's 1 MB). It used to take the daemon down
      // before the attempt was stored, on every redelivery; past the limit
      // nothing of it is read, so it is filed under its position.
      {"deep", Job("deep", "{\"x\":" + std::string(200000, '[') + std::string(200000, ']') + "}"),
       "invalid:" + topic_ + ":0:7", "invalid_message"},
      // Issue 53: reply_to named any topic. Its result would come back as a
      // job on the jobs topic, or pass for a refused job on the dead-letter
      // one; Kafka's own topics are never a job's to write.
      {"rt-jobs", WithReplyTo("rt-jobs", topic_), "rt-jobs", "reply_to_not_allowed"},
      {"rt-dlq", WithReplyTo("rt-dlq", topic_ + ".dlq"), "rt-dlq", "reply_to_not_allowed"},
      {"rt-offsets", WithReplyTo("rt-offsets", "__consumer_offsets"), "rt-offsets",
       "reply_to_not_allowed"},
      // Invalid UTF-8 in a string, and the HTTP jobs' id prefix (filed
      // under their positions: no id of theirs is kept).
      {"", "{\"id\":\"u\",\"pipeline\":\"document-stats\xff\"}", "invalid:" + topic_ + ":0:11",
       "invalid_json"},
      {"", Job("http:taken"), "invalid:" + topic_ + ":0:12", "invalid_message"},
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
