#include "daemon_harness.h"

#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "ellm/store/database.h"

namespace ellm::testing {

using Clock = std::chrono::steady_clock;

std::string UniqueName(const std::string& prefix) {
  return prefix + "-" + std::to_string(getpid()) + "-" +
         std::to_string(Clock::now().time_since_epoch().count() % 100000000);
}

std::unique_ptr<Daemon> Daemon::Start(const DaemonConfig& c, const std::string& dir,
                                      const std::map<std::string, std::string>& env) {
  std::string config_path = dir + "/" + c.instance + ".yaml";
  {
    std::ofstream y(config_path);
    y << "model:\n  path: " << c.model_path << "\n"
      << (c.context > 0 ? "  context: " + std::to_string(c.context) + "\n" : std::string())
      << (c.attn_scores.empty() ? std::string() : "  attn_scores: " + c.attn_scores + "\n")
      << "store:\n  path: " << c.store_path << "\n"
      << "kafka:\n  enabled: true\n  brokers: " << c.brokers << "\n  group_id: " << c.group
      << "\n  group_instance_id: " << c.instance << "\n  jobs_topic: " << c.topic
      << "\n  results_topic: " << c.results_topic
      << "\n  dead_letter_topic: " << c.dead_letter_topic
      << "\n  session_timeout_ms: " << c.session_timeout_ms
      << "\n  max_poll_interval_ms: " << c.max_poll_interval_ms
      << "\n  shutdown_grace_s: " << c.shutdown_grace_s
      << "\n  transactions: " << (c.transactions ? "true" : "false") << "\n"
      << "  properties:\n    topic.metadata.refresh.interval.ms: '1000'\n";
    for (const auto& [k, v] : c.kafka_properties) y << "    " << k << ": '" << v << "'\n";
    y << "jobs:\n  allowed_roots: [" << c.inbox << "]\n  max_attempts: " << c.max_attempts
      << "\nlog:\n  level: debug\n"
      << (c.metrics ? "metrics:\n  enabled: true\n  listen: 127.0.0.1:0\n" : "")
      << (c.pipelines_dir.empty() ? "" : "pipelines:\n  dir: " + c.pipelines_dir + "\n");
  }
  auto d = std::unique_ptr<Daemon>(new Daemon());
  d->log_path_ = dir + "/" + c.instance + ".log";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(d->log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    setenv("ELLM_EXTRACTOR", ELLM_EXTRACTOR_PATH, 1);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl(ELLMD_PATH, ELLMD_PATH, "--config", config_path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  d->pid_ = pid;
  return d;
}

Daemon::~Daemon() {
  if (Running()) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

void Daemon::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

bool Daemon::Running() {
  if (reaped_ || pid_ <= 0) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    return false;
  }
  return true;
}

int Daemon::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Running()) {
    if (Clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

bool Daemon::Stopped() const {
  if (reaped_ || pid_ <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

std::string Daemon::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Daemon::MetricsPort() const {
  std::string log = Log();
  size_t at = log.find("metrics on ");
  if (at == std::string::npos) return 0;
  size_t port = log.find("(port ", at);
  return port == std::string::npos ? 0 : std::atoi(log.c_str() + port + 6);
}

bool CreateTopic(const std::string& brokers, const std::string& topic, int partitions) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk) return false;
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, err, sizeof(err));
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q);
  bool ok = false;
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  if (ev) {
    const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t** topics =
        res ? rd_kafka_CreateTopics_result_topics(res, &n) : nullptr;
    ok = rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR && n == 1 &&
         rd_kafka_topic_result_error(topics[0]) == RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return ok;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

std::vector<ingest::KafkaMessage> ReadTopic(const std::string& brokers, const std::string& topic,
                                            std::chrono::milliseconds quiet) {
  ingest::KafkaOptions o;
  o.brokers = brokers;
  o.properties["isolation.level"] = "read_committed";  // librdkafka's default, stated
  std::vector<ingest::KafkaMessage> out;
  auto c = ingest::KafkaConsumer::Create(o, UniqueName("reader"), {topic});
  if (!c.ok()) return out;
  auto last = Clock::now();
  // Allow the first assignment to take a while; then stop after `quiet`.
  auto first_deadline = Clock::now() + std::chrono::seconds(20);
  while (true) {
    auto m = (*c)->Poll(std::chrono::milliseconds(200));
    if (m.ok() && m->has_value()) {
      out.push_back(std::move(**m));
      last = Clock::now();
      continue;
    }
    if (out.empty() ? Clock::now() > first_deadline : Clock::now() - last > quiet) break;
  }
  return out;
}

int64_t CountIn(const std::string& store_path, const std::string& sql) {
  store::DatabaseOptions o;
  o.read_only = true;
  auto db = store::Database::Open(store_path, o);
  if (!db.ok()) return -1;
  auto n = (*db)->QueryInt(sql);
  return n.ok() ? *n : -1;
}

std::string TextIn(const std::string& store_path, const std::string& sql) {
  store::DatabaseOptions o;
  o.read_only = true;
  auto db = store::Database::Open(store_path, o);
  if (!db.ok()) return "";
  auto text = (*db)->QueryText(sql);
  return text.ok() ? *text : "";
}

DaemonConfig DaemonOn(const std::string& brokers, const std::string& model,
                      const std::string& topic, const std::string& dir, const std::string& inbox,
                      const std::string& instance) {
  DaemonConfig c;
  c.model_path = model;
  c.brokers = brokers;
  c.topic = topic;
  c.results_topic = topic + ".results";
  c.dead_letter_topic = topic + ".dlq";
  c.group = topic + "-group";
  c.instance = instance;
  c.store_path = dir + "/ellm.db";
  c.inbox = inbox;
  return c;
}

}  // namespace ellm::testing
