// ellmd: the batch document-processing daemon.
//
// Lifecycle: Init (config, store, model) -> Ready (sd_notify READY=1) ->
// Draining (on SIGTERM/SIGINT) -> Stopped; components stop in reverse order.
// SIGHUP reloads the pipeline files before the next job; with WatchdogSec=
// the watchdog is fed while the consumer thread keeps polling.
// With kafka.enabled, Ready means consuming the jobs topic (JobConsumer +
// JobRunner); SIGTERM drains the running job within kafka.shutdown_grace_s.
// With kafka.transactions the producer is transactional, its id derived
// from the group and the instance (docs/architecture.md, "Exactly-once
// results"), so a restarted instance fences the one it replaces.
// The signal thread also keeps /healthz and /readyz current (health.h:
// the consumer's polls against their bound, a write probe of the store
// every 10 s, whether the consumer is consuming), and the running job's
// progress reaches ellm_job_progress_* and STATUS= (at most once a second).
#include <getopt.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "ellm/app/config.h"
#include "ellm/app/http_jobs.h"
#include "ellm/app/runtime.h"
#include "ellm/engine/cpu_features.h"
#include "ellm/ingest/extract.h"
#include "ellm/ingest/job_consumer.h"
#include "ellm/server/api_server.h"
#include "ellm/store/database.h"
#include "ellm/store/job_store.h"
#include "health.h"
#include "job_runner.h"
#include "logging.h"
#include "metrics.h"

namespace {

constexpr const char* kUsage =
    "usage: ellmd [--config FILE] [--check | --check-config] [--version]\n"
    "  --config FILE  configuration (default /etc/ellm/ellm.yaml)\n"
    "  --check, --check-config\n"
    "                 validate the configuration, pipelines, model and store, then exit\n";

// SIGTERM and SIGINT are taken by one thread with sigtimedwait. They are
// blocked first thing in main, before any thread starts (the engine's pool,
// librdkafka's, the job worker), so every thread inherits the blocked mask.
sigset_t BlockedSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  return signals;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What the consumer side needs from start-up, and the flags the signal
// thread sets.
struct Context {
  ellm::app::Runtime* runtime;
  std::atomic<bool> stop{false};
  std::atomic<bool> reload{false};
  std::atomic<int64_t> heartbeat_ns{0};  // the consumer thread's last poll
  ellm::daemon::Metrics* metrics = nullptr;
  // Why the consumer is not consuming ("" while it is; JobConsumerOptions::
  // on_consuming), read by the signal thread for /readyz.
  std::mutex consuming_mu;
  std::string not_consuming = "starting";
  std::atomic<int64_t> last_progress_status_ns{0};  // STATUS= at most once a second
  void NotConsuming(const std::string& why) {
    std::lock_guard<std::mutex> lock(consuming_mu);
    not_consuming = why;
  }
  std::string NotConsuming() {
    std::lock_guard<std::mutex> lock(consuming_mu);
    return not_consuming;
  }
};

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// Test hooks: the ELLM_TEST_* switches the crash and fault tests set.
void ApplyTestSwitches(ellm::daemon::JobRunnerOptions& runner_options) {
  const char* crash = std::getenv("ELLM_TEST_CRASH_AFTER_STORE");
  runner_options.crash_after_store_commit = crash && std::string(crash) == "1";
  if (const char* job = std::getenv("ELLM_TEST_CRASH_IN_JOB"); job && *job) {
    runner_options.crash_in_job = job;
  }
  for (auto [name, sig] : {std::pair{"ELLM_TEST_KILL_AFTER_PUBLISH", SIGKILL},
                           std::pair{"ELLM_TEST_STOP_AFTER_PUBLISH", SIGSTOP}}) {
    if (const char* job = std::getenv(name); job && *job) {
      runner_options.signal_after_publish_job = job;
      runner_options.signal_after_publish = sig;
    }
  }
  if (const char* once = std::getenv("ELLM_TEST_AFTER_PUBLISH_ONCE"); once && *once) {
    runner_options.signal_after_publish_once_file = once;
  }
  if (const char* forks = std::getenv("ELLM_TEST_FAIL_EXTRACTOR_FORKS"); forks && *forks) {
    ellm::ingest::FailExtractorForksForTesting(std::atoi(forks));
    spdlog::warn("ELLM_TEST_FAIL_EXTRACTOR_FORKS: the next {} extractor forks will fail", forks);
  }
}

// The job runner's settings from the configuration, and its callbacks
// into the daemon's metrics and status line.
ellm::daemon::JobRunnerOptions RunnerOptions(Context& ctx) {
  const ellm::app::Config& config = ctx.runtime->config;
  const ellm::app::KafkaConfig& k = config.kafka;
  ellm::daemon::JobRunnerOptions runner_options;
  runner_options.results_topic = k.results_topic;
  runner_options.dead_letter_topic = k.dead_letter_topic;
  runner_options.limits.allowed_roots = config.jobs.allowed_roots;
  runner_options.limits.max_inline_bytes = static_cast<size_t>(config.jobs.max_inline_bytes);
  runner_options.limits.max_documents = static_cast<size_t>(config.jobs.max_documents);
  runner_options.limits.reply_topics = k.reply_topics;
  runner_options.limits.reserved_topics = {k.jobs_topic, k.dead_letter_topic};
  runner_options.max_publish_attempts = config.jobs.max_publish_attempts;
  runner_options.timeout_s = config.jobs.timeout_s;
  ApplyTestSwitches(runner_options);
  runner_options.worker = (k.group_instance_id.empty() ? Hostname() : k.group_instance_id) + "/" +
                          std::to_string(getpid());
  runner_options.status = [&ctx](const std::string& what) {
    ctx.metrics->SetJobProgress(0, 0);  // a job starts, or none runs
    ctx.last_progress_status_ns = NowNs();
    sd_notify(0, ("STATUS=" + what).c_str());
  };
  runner_options.progress = [&ctx](const std::string& id, const std::string& pipeline,
                                   const ellm::pipelines::Progress& step) {
    if (step.stage == "prefill") ctx.metrics->SetJobProgress(step.done, step.total);
    const int64_t now = NowNs();
    if (now - ctx.last_progress_status_ns.load() < int64_t{1000} * 1000 * 1000) return;
    ctx.last_progress_status_ns = now;
    const std::string line =
        ellm::daemon::JobStatusLine(id, pipeline, step.stage, step.done, step.total);
    sd_notify(0, ("STATUS=" + line).c_str());
  };
  runner_options.on_dead_letter = [&ctx] { ctx.metrics->DeadLettered(); };
  runner_options.on_producer_replaced = [&ctx] {
    ctx.metrics->ClientReplaced(ellm::daemon::Metrics::Client::kProducer);
  };
  runner_options.on_transaction_aborted = [&ctx] { ctx.metrics->TransactionAborted(); };
  runner_options.reload = [&ctx] { return ctx.runtime->LoadPipelines(); };
  runner_options.reload_requested = &ctx.reload;
  runner_options.job_mutex = &ctx.runtime->job_mutex;
  if (auto m = k.properties.find("message.max.bytes"); m != k.properties.end()) {
    try {
      runner_options.max_message_bytes = std::stoul(m->second);
    } catch (...) {
      // librdkafka refuses the value itself, naming the property
    }
  }
  runner_options.on_finished = [&ctx](const std::string& pipeline, bool ok, double seconds) {
    ctx.metrics->JobFinished(pipeline, ok, seconds);
  };
  runner_options.on_failure = [&ctx](const std::string&, bool transient) {
    ctx.metrics->JobFailure(transient);
  };
  auto kv_gauges = [&ctx] {
    const ellm::KvStats kv = ctx.runtime->generator->kv_stats();
    ctx.metrics->SetKvBytes(static_cast<int64_t>(kv.resident_bytes),
                            static_cast<int64_t>(kv.spilled_bytes));
  };
  runner_options.on_result = [&ctx, kv_gauges](const ellm::pipelines::PipelineOutput& r) {
    ctx.metrics->Generation(r.prompt_tokens, r.prefill_ms, r.generated_tokens, r.decode_ms);
    kv_gauges();  // the last job's KV: resident now, spilled during it
  };
  kv_gauges();  // the gauges start at the loaded model's KV
  return runner_options;
}

// The consumer's settings: the group, its instance, the timeouts.
ellm::ingest::JobConsumerOptions ConsumerOptions(Context& ctx,
                                                 const ellm::ingest::KafkaOptions& kafka,
                                                 const std::string& instance) {
  const ellm::app::KafkaConfig& k = ctx.runtime->config.kafka;
  ellm::ingest::JobConsumerOptions consumer_options;
  consumer_options.kafka = kafka;
  consumer_options.kafka.properties["group.instance.id"] = instance;
  consumer_options.kafka.properties.emplace("session.timeout.ms",
                                            std::to_string(k.session_timeout_ms));
  consumer_options.kafka.properties.emplace("max.poll.interval.ms",
                                            std::to_string(k.max_poll_interval_ms));
  // Heartbeats must come well within the session timeout (Kafka's rule of
  // thumb: a third of it); librdkafka's default of 3 s breaks short sessions.
  consumer_options.kafka.properties.emplace(
      "heartbeat.interval.ms", std::to_string(std::min(3000, k.session_timeout_ms / 3)));
  consumer_options.group_id = k.group_id;
  consumer_options.jobs_topic = k.jobs_topic;
  consumer_options.shutdown_grace = std::chrono::seconds(k.shutdown_grace_s);
  consumer_options.tick = [&ctx] { ctx.heartbeat_ns = NowNs(); };
  consumer_options.on_lag = [&ctx](int64_t lag) { ctx.metrics->SetConsumerLag(lag); };
  consumer_options.on_retry = [&ctx] { ctx.metrics->JobRetried(); };
  consumer_options.on_replaced = [&ctx] {
    ctx.metrics->ClientReplaced(ellm::daemon::Metrics::Client::kConsumer);
  };
  consumer_options.on_consuming = [&ctx](const std::string& why) { ctx.NotConsuming(why); };
  return consumer_options;
}

// Consumes jobs until `stop`; returns the process exit code.
int RunKafka(Context& ctx) {
  const ellm::app::Config& config = ctx.runtime->config;
  const ellm::app::KafkaConfig& k = config.kafka;
  ellm::ingest::KafkaOptions kafka;
  kafka.brokers = k.brokers;
  kafka.client_id = "ellmd-" + Hostname();
  kafka.properties = k.properties;

  const std::string instance =
      k.group_instance_id.empty() ? "ellmd-" + Hostname() : k.group_instance_id;
  // Stable per instance, unique in the cluster: a restarted instance fences
  // its predecessor's producer (and ends its open transaction).
  const std::string transactional_id =
      k.transactions ? "ellmd/" + k.group_id + "/" + instance : std::string();
  auto producer = ellm::ingest::KafkaProducer::Create(kafka, transactional_id);
  if (!producer.ok()) {
    spdlog::critical("{}", producer.status().ToString());
    return 1;
  }
  const ellm::daemon::JobRunnerOptions runner_options = RunnerOptions(ctx);
  ellm::daemon::JobRunner runner(ctx.runtime->store.get(), producer->get(),
                                 ctx.runtime->registry.get(), runner_options);

  const ellm::ingest::JobConsumerOptions consumer_options = ConsumerOptions(ctx, kafka, instance);
  auto consumer = ellm::ingest::JobConsumer::Create(consumer_options, &runner);
  if (!consumer.ok()) {
    spdlog::critical("{}", consumer.status().ToString());
    return 1;
  }
  spdlog::info("stage=Ready brokers={} group={} instance={} topic={} transactions={}", k.brokers,
               k.group_id, instance, k.jobs_topic,
               transactional_id.empty() ? "off" : "'" + transactional_id + "'");
  sd_notify(0, "READY=1\nSTATUS=idle");
  ellm::Status st = (*consumer)->Run(ctx.stop);
  ctx.NotConsuming("stopped");
  if (!st.ok()) {
    spdlog::critical("kafka: {}", st.ToString());
    return 1;
  }
  return 0;
}

int Run(const std::string& config_path, bool check_only) {
  auto config = ellm::app::LoadConfig(config_path);
  if (!config.ok()) {
    spdlog::critical("{}", config.status().ToString());
    return 78;  // EX_CONFIG: systemd will not restart-loop on a bad file
  }
  ellm::daemon::ConfigureLogging(config->log);
  spdlog::info("stage=Init config={} cpu=[{}]", config_path, ellm::HostCpu().ToString());

  ellm::app::RuntimeStage stage = ellm::app::RuntimeStage::kModel;
  auto runtime = ellm::app::OpenRuntime(*config, {}, &stage);
  if (!runtime.ok()) {
    const std::string error = runtime.status().ToString();
    switch (stage) {
      case ellm::app::RuntimeStage::kModel:
        spdlog::critical(
            "model: {} (place a GGUF model there with `ellm model install FILE.gguf`, or set "
            "model.path in {}; in a source tree scripts/fetch-model fetches Gemma 3 270M)",
            error, config_path);
        return 78;  // EX_CONFIG: the unit's RestartPreventExitStatus stops a restart loop
      case ellm::app::RuntimeStage::kStore:
        spdlog::critical("store: {}", error);
        return 1;
      case ellm::app::RuntimeStage::kExtractor:
        spdlog::critical("document extractor: {}", error);
        return 1;
      case ellm::app::RuntimeStage::kPipelines:
        spdlog::critical("pipelines: {}", error);
        return 78;
      case ellm::app::RuntimeStage::kEngine:
        spdlog::critical("model: {}", error);
        return 1;
    }
    return 1;
  }
  ellm::app::Runtime& rt = **runtime;
  spdlog::info("model {} arch={} tensors={}", rt.model_path, rt.model_architecture,
               rt.model_tensors);
  spdlog::info("store {} schema v{}", rt.store_path, ellm::store::Database::SchemaVersion());
  std::string names;
  for (const auto& n : rt.registry->Names()) names += (names.empty() ? "" : ", ") + n;
  spdlog::info("pipelines from {}: {}; context {} tokens", rt.pipelines_dir, names,
               rt.generator->context());
  if (check_only) {
    if (config->http.enabled && !config->http.api_keys_file.empty()) {
      auto keys = ellm::server::ReadApiKeysFile(config->http.api_keys_file);
      if (!keys.ok()) {
        spdlog::critical("http.api_keys_file: {}", keys.status().ToString());
        return 78;
      }
    }
    spdlog::info("check passed");
    return 0;
  }

  auto requeued = rt.store->RecoverInterrupted();
  if (!requeued.ok()) {
    spdlog::critical("store: {}", requeued.status().ToString());
    return 1;
  }
  if (*requeued > 0) {
    spdlog::warn(
        "{} job(s) were interrupted by the last shutdown; they run again when their "
        "messages are delivered again",
        *requeued);
  }

  // Retention: finished jobs older than store.retention_days go, now and
  // daily (from the signal thread, on a connection of its own).
  const int retention = config->store.retention_days;
  auto prune = [retention](ellm::store::JobStore& store) {
    auto pruned = store.Prune(retention);
    if (!pruned.ok()) {
      spdlog::warn("store: {}", pruned.status().ToString());
    } else if (*pruned > 0) {
      spdlog::info("store: pruned {} finished job(s) older than {} days", *pruned, retention);
    }
  };
  if (retention > 0) prune(*rt.store);

  auto metrics = ellm::daemon::Metrics::Start(config->metrics);
  if (!metrics.ok()) {
    spdlog::critical("{}", metrics.status().ToString());
    return 1;
  }
  if ((*metrics)->port() > 0) {
    spdlog::info("metrics on {} (port {}): /metrics /healthz /readyz", config->metrics.listen,
                 (*metrics)->port());
  }
  // The OpenAI-compatible API on the same engine: its replies take
  // interactive turns, so a running Kafka job steps aside between slices.
  std::unique_ptr<ellm::server::ApiServer> http;
  std::unique_ptr<ellm::app::HttpJobQueue> http_jobs;
  std::thread http_thread;
  if (config->http.enabled) {
    ellm::server::ApiServerOptions options = config->http.server;
    if (!config->http.api_keys_file.empty()) {
      auto keys = ellm::server::ReadApiKeysFile(config->http.api_keys_file);
      if (!keys.ok()) {
        spdlog::critical("http.api_keys_file: {}", keys.status().ToString());
        return 78;
      }
      options.api_keys = std::move(*keys);
    }
    http = std::make_unique<ellm::server::ApiServer>(options);
    if (ellm::Status bound = http->Bind(); !bound.ok()) {
      spdlog::critical("http: {}", bound.ToString());
      return 1;
    }
    ellm::Engine& engine = rt.generator->engine();
    const std::string model_id = std::filesystem::path(rt.model_path).stem().string();
    if (ellm::Status set = http->SetModel(&engine, model_id, "ellm-" + engine.info().fingerprint);
        !set.ok()) {
      spdlog::critical("http: {}", set.ToString());
      return 1;
    }
    auto queue =
        ellm::app::HttpJobQueue::Start(&rt, "ellmd-http/" + std::to_string(getpid()),
                                       [](ellm::app::LogLevel level, const std::string& line) {
                                         switch (level) {
                                           case ellm::app::LogLevel::kDebug:
                                             spdlog::debug("{}", line);
                                             break;
                                           case ellm::app::LogLevel::kInfo:
                                             spdlog::info("{}", line);
                                             break;
                                           case ellm::app::LogLevel::kWarn:
                                             spdlog::warn("{}", line);
                                             break;
                                           case ellm::app::LogLevel::kError:
                                             spdlog::error("{}", line);
                                             break;
                                         }
                                       });
    if (!queue.ok()) {
      spdlog::critical("http jobs: {}", queue.status().ToString());
      return 1;
    }
    http_jobs = std::move(*queue);
    http->SetJobs(http_jobs.get());
    http_thread = std::thread([&http] {
      if (!http->Run()) spdlog::error("http: the API server stopped serving");
    });
    spdlog::info("http API on {} ({} key(s), {} session(s) of {} tokens)", http->address(),
                 options.api_keys.size(), options.sessions, options.n_ctx);
    // One /metrics for the daemon and its API.
    (*metrics)->SetExtraExposition([api = http.get()] { return api->MetricsText(); });
  }
  Context ctx;
  ctx.metrics = metrics->get();
  ctx.runtime = &rt;
  ctx.heartbeat_ns = NowNs();

  // The signal thread also keeps systemd's watchdog fed, but only while the
  // consumer thread shows signs of life (it ticks at every poll, even while
  // a long job runs); a stuck consumer is restarted by systemd.
  uint64_t watchdog_usec = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  const ellm::daemon::PollBound poll_bound = ellm::daemon::ConsumerPollBound(
      watchdog ? watchdog_usec : 0, config->kafka.max_poll_interval_ms);
  // /healthz's store probe, on a connection of its own. It waits at most
  // 1 s for the write lock (a writer holding it longer is the problem the
  // probe reports), so a signal waits at most that long too.
  ellm::store::DatabaseOptions probe_options;
  probe_options.busy_timeout_ms = 1000;
  auto probe_store = ellm::store::Database::Open(rt.store_path, probe_options);
  if (!probe_store.ok()) {
    spdlog::critical("store: {}", probe_store.status().ToString());
    return 1;
  }
  sigset_t signals = BlockedSignals();
  std::atomic<bool> finished{false};
  bool kafka = config->kafka.enabled;
  std::thread signal_thread([&] {
    timespec tick{0, 200 * 1000 * 1000};
    int64_t last_ping = 0;
    int64_t last_probe = 0;
    std::string store_error;
    bool consumer_stuck = false;
    constexpr int64_t kProbeNs =
        int64_t{ellm::daemon::kStoreProbeInterval.count()} * 1000 * 1000 * 1000;
    constexpr int64_t kRecheckNs =
        int64_t{ellm::daemon::kStoreRecheckInterval.count()} * 1000 * 1000 * 1000;
    int64_t last_prune = NowNs();
    constexpr int64_t kDayNs = int64_t{24} * 3600 * 1000 * 1000 * 1000;
    while (!finished.load()) {
      int sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig == SIGHUP) {
        spdlog::info("SIGHUP: pipelines reload before the next job");
        ctx.reload = true;
      } else if (sig > 0) {
        spdlog::info("stage=Draining signal={}", sig);
        sd_notify(0, "STOPPING=1");
        ctx.stop = true;
      }
      int64_t now = NowNs();
      if (retention > 0 && now - last_prune >= kDayNs) {
        last_prune = now;
        ellm::store::JobStoreOptions options;
        options.max_attempts = config->jobs.max_attempts;
        auto own = ellm::store::JobStore::Open(rt.store_path, options);
        if (own.ok()) prune(**own);
      }
      if (now - last_probe >= (store_error.empty() ? kProbeNs : kRecheckNs)) {
        last_probe = now;
        ellm::Status probed = (*probe_store)->ProbeWrite();
        std::string error = probed.ok() ? "" : probed.message();
        if (error != store_error) {
          if (error.empty()) {
            spdlog::info("store: writable again");
          } else {
            spdlog::error("store: cannot be written: {}", error);
          }
          store_error = error;
        }
      }
      const std::string consumer_problem =
          kafka ? ellm::daemon::ConsumerPollProblem(now - ctx.heartbeat_ns.load(), poll_bound) : "";
      if (consumer_problem.empty() == consumer_stuck) {
        consumer_stuck = !consumer_problem.empty();
        if (consumer_stuck) {
          spdlog::error("kafka: {}", consumer_problem);
        } else {
          spdlog::info("kafka: the consumer polls again");
        }
      }
      ctx.metrics->SetHealth(ellm::daemon::HealthProblem(consumer_problem, store_error));
      ctx.metrics->SetReadiness(ellm::daemon::ReadinessProblem(
          ctx.stop.load(), kafka, ctx.NotConsuming(), consumer_problem));
      // The watchdog is fed within the same bound as /healthz.
      int64_t half = static_cast<int64_t>(watchdog_usec) * 500;
      if (watchdog && !consumer_stuck && now - last_ping >= half / 2) {
        sd_notify(0, "WATCHDOG=1");
        last_ping = now;
      }
    }
  });

  int rc = 0;
  if (kafka) {
    rc = RunKafka(ctx);
  } else {
    spdlog::info("stage=Ready (kafka disabled; nothing to consume)");
    sd_notify(0, "READY=1\nSTATUS=ready");
    ctx.NotConsuming("");
    while (!ctx.stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  finished = true;
  signal_thread.join();
  if (http) {
    (*metrics)->SetExtraExposition(nullptr);
    http->Stop();
    http_thread.join();
    http.reset();       // before the engine it serves
    http_jobs.reset();  // a running HTTP job stays in the inbox for the next start
  }
  runtime->reset();  // the pipelines, the engine, then the store
  spdlog::info("stage=Stopped");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t signals = BlockedSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::string config_path = "/etc/ellm/ellm.yaml";
  bool check_only = false;
  static const option kOptions[] = {
      {"config", required_argument, nullptr, 'c'}, {"check", no_argument, nullptr, 'k'},
      {"check-config", no_argument, nullptr, 'k'}, {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},      {nullptr, 0, nullptr, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "c:kh", kOptions, nullptr)) != -1) {
    switch (opt) {
      case 'c':
        config_path = optarg;
        break;
      case 'k':
        check_only = true;
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      case 'V':
        std::printf("ellmd %s\n", ELLM_VERSION);
        return 0;
      default:
        std::fputs(kUsage, stderr);
        return 2;
    }
  }
  return Run(config_path, check_only);
}
