// Issue 37 item 6, "health that means something", against a real `ellmd`,
// the real broker, model and SQLite file: /healthz fails naming the store
// while another writer holds its lock (and a job delivered meanwhile is
// retried, counted in ellm_job_retries_total), then recovers; a bad message
// counts in ellm_dead_letters_total; a long prefill shows in
// ellm_job_progress_* and in systemd's STATUS= line (read from a
// NOTIFY_SOCKET of the test's own); /readyz fails while the daemon drains.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon_harness.h"
#include "ellm/ingest/kafka.h"
#include "ellm/store/database.h"
#include "http_get.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// systemd's notification socket, played by the test: the daemon's sd_notify
// datagrams ("READY=1\nSTATUS=idle", "STATUS=running job ...") land here.
// A thread reads them as they come, as systemd does: a full queue (10
// datagrams by default) would block the sender.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (bound_) reader_ = std::thread([this] { Read(); });
  }
  ~NotifySocket() {
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  // Every STATUS= value received so far, in order.
  std::vector<std::string> Statuses() {
    std::lock_guard<std::mutex> lock(mu_);
    return statuses_;
  }

 private:
  void Read() {
    char buf[4096];
    while (!stop_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) continue;
      std::string datagram(buf, static_cast<size_t>(n));
      size_t at = datagram.find("STATUS=");
      if (at == std::string::npos) continue;
      std::lock_guard<std::mutex> lock(mu_);
      statuses_.push_back(datagram.substr(at + 7, datagram.find('\n', at) - at - 7));
    }
  }

  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> statuses_;
};

// The value of an unlabelled sample in a /metrics body, or -1.
double Sample(const std::string& body, const std::string& name) {
  size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::atof(body.c_str() + at + name.size() + 2);
}

class Health : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("ellm-health");
    inbox_ = dir_ + "/inbox";
    defs_ = dir_ + "/pipelines";
    std::filesystem::create_directories(inbox_);
    std::filesystem::create_directories(defs_);
    std::ofstream(inbox_ + "/short.txt") << "Revenue grew by four percent.\n";
    // About 4,300 tokens: five prefill slices of 1,024, seconds on 2 cores.
    // Its first line is this run's own, so no prefix cache has it.
    std::ofstream ledger(inbox_ + "/ledger.txt");
    ledger << "Ledger " << topic_ << ".\n";
    for (int i = 1; i <= 120; ++i) {
      ledger << "In region " << i << " the unit sold " << (1000 + 37 * i) << " widgets at "
             << (i % 9 + 1) << "." << (i % 7) << "0 euros each, " << (i % 23)
             << " percent above the plan for quarter " << (i % 4 + 1) << ".\n";
    }
    // One single-pass prompt over the whole document, a few tokens out.
    std::ofstream(defs_ + "/gist.yaml") << R"(name: gist
version: "1"
prompt: "{{document}}\n\nIn one sentence:"
generation: {max_tokens: 4}
)";
  }
  void TearDown() override {
    if (!HasFailure() && !std::getenv("ELLM_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_);
  }
  std::string Job(const std::string& id, const std::string& pipeline, const std::string& doc) {
    return R"({"id":")" + id + R"(","pipeline":")" + pipeline + R"(","documents":[{"path":")" +
           inbox_ + "/" + doc + R"("}]})";
  }
  int64_t Count(const std::string& sql) { return CountIn(dir_ + "/ellm.db", sql); }

  std::string dir_, inbox_, defs_;
  std::string topic_ = UniqueName("ellm-health");
};

TEST_F(Health, ProbesFollowTheStoreAndTheDrainAndMetricsShowRetriesDeadLettersAndProgress) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  ASSERT_TRUE(CreateTopic(brokers, topic_, 1));
  NotifySocket notify(dir_ + "/notify");
  ASSERT_TRUE(notify.bound());
  DaemonConfig c = DaemonOn(brokers, model, topic_, dir_, inbox_, "h");
  c.pipelines_dir = defs_;
  c.metrics = true;
  c.shutdown_grace_s = 120;  // the drained job finishes
  auto d = Daemon::Start(c, dir_, {{"NOTIFY_SOCKET", dir_ + "/notify"}});
  ASSERT_TRUE(WaitFor([&] { return d->MetricsPort() > 0; }, seconds(30))) << d->Log();
  const int port = d->MetricsPort();
  auto get = [&](const std::string& path) { return HttpRequest(port, "GET", path); };

  // Ready once the consumer has its partition; healthy.
  ASSERT_TRUE(WaitFor([&] { return get("/readyz").status == 200; }, seconds(30))) << d->Log();
  EXPECT_EQ(get("/readyz").body, "ready\n");
  EXPECT_EQ(get("/healthz").body, "ok\n");

  ingest::KafkaOptions o;
  o.brokers = brokers;
  auto producer = ingest::KafkaProducer::Create(o);
  ASSERT_TRUE(producer.ok()) << producer.status().ToString();
  auto produce = [&](const std::string& key, const std::string& payload) {
    Status s = (*producer)->Produce(topic_, key, payload);
    ASSERT_TRUE(s.ok()) << s.ToString();
  };

  // A bad message is dead-lettered (and its failure event published).
  produce("bad", "not json");
  ASSERT_TRUE(
      WaitFor([&] { return Count("SELECT count(*) FROM events WHERE kind='published'") == 1; },
              seconds(30)))
      << d->Log();
  EXPECT_EQ(Sample(get("/metrics").body, "ellm_dead_letters_total"), 1) << get("/metrics").body;

  // Another writer holds the store's lock: the probe fails within its
  // interval, and a job delivered meanwhile cannot begin and is retried.
  {
    auto holder = store::Database::Open(dir_ + "/ellm.db");
    ASSERT_TRUE(holder.ok()) << holder.status().ToString();
    ASSERT_TRUE((*holder)->Exec("BEGIN IMMEDIATE").ok());
    produce("quick", Job("quick", "document-stats", "short.txt"));
    HttpResponse sick;
    EXPECT_TRUE(WaitFor(
        [&] {
          sick = get("/healthz");
          return sick.status == 503 && Sample(get("/metrics").body, "ellm_job_retries_total") >= 1;
        },
        seconds(25)))
        << sick.status << " " << sick.body << get("/metrics").body << d->Log();
    EXPECT_EQ(sick.body.rfind("unhealthy: the store cannot be written: ", 0), 0u) << sick.body;
    EXPECT_NE(sick.body.find("locked"), std::string::npos) << sick.body;
    EXPECT_EQ(std::count(sick.body.begin(), sick.body.end(), '\n'), 1) << sick.body;
    EXPECT_EQ(get("/readyz").status, 200) << "still consuming";
    ASSERT_TRUE((*holder)->Exec("ROLLBACK").ok());
  }
  EXPECT_TRUE(WaitFor([&] { return get("/healthz").status == 200; }, seconds(25))) << d->Log();
  EXPECT_EQ(get("/healthz").body, "ok\n");
  EXPECT_TRUE(WaitFor(
      [&] { return Count("SELECT count(*) FROM jobs WHERE id='quick' AND status='succeeded'"); },
      seconds(30)))
      << d->Log();

  // A long prefill: progress between 0 and its target, and in STATUS=.
  produce("long", Job("long", "gist", "ledger.txt"));
  double positions = -1, target = -1;
  EXPECT_TRUE(WaitFor(
      [&] {
        std::string body = get("/metrics").body;
        positions = Sample(body, "ellm_job_progress_positions");
        target = Sample(body, "ellm_job_progress_target_positions");
        return positions > 0 && positions < target;
      },
      seconds(60)))
      << positions << " of " << target << "\n"
      << d->Log();
  EXPECT_GT(target, 3000) << "the whole document in one prefill";

  // Draining: not ready while the job finishes its grace; still healthy.
  d->Signal(SIGTERM);
  HttpResponse draining;
  EXPECT_TRUE(WaitFor(
      [&] {
        draining = get("/readyz");
        return draining.status == 503;
      },
      seconds(5)))
      << draining.status << " " << draining.body << d->Log();
  EXPECT_EQ(draining.body, "not ready: draining\n");
  EXPECT_EQ(get("/healthz").status, 200);
  EXPECT_EQ(d->Wait(seconds(120)), 0) << d->Log();
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id='long' AND status='succeeded'"), 1)
      << d->Log();

  // STATUS=: the job, its pipeline and its prefill, then idle.
  const std::vector<std::string> statuses = notify.Statuses();
  std::string all;
  for (const auto& s : statuses) all += s + "\n";
  bool prefill = false;
  for (const auto& s : statuses) {
    prefill = prefill || s.rfind("running job long (gist): prefill ", 0) == 0;
  }
  EXPECT_TRUE(prefill) << all;
  ASSERT_FALSE(statuses.empty());
  EXPECT_EQ(statuses.back(), "idle") << all;
}

}  // namespace
}  // namespace ellm::testing
