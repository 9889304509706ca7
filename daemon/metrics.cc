// The prometheus-cpp and cpp-httplib adapter behind metrics.h (cpp-httplib
// is the HTTP library of the API server too). Every exception either
// library throws is caught here: at start-up it becomes a Status; while
// running, a metric that cannot be recorded is dropped and a request that
// cannot be answered gets a 500.
#include "metrics.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "ellm/base/socket_options.h"
#include "ellm/server/front_gate.h"

namespace ellm::daemon {
namespace {

// Jobs take from about a second (a short text) to an hour (a long contract
// through map-reduce on a busy machine); roughly 1-2-5 steps over that range.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};
  return kBuckets;
}

// The content type of the text exposition format, version 0.0.4.
constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kTextContentType = "text/plain; charset=utf-8";

// Why binding host:port fails, as the kernel says it ("Address already in
// use"): cpp-httplib only reports that it failed. Binds a probe socket with
// the options cpp-httplib uses (SO_REUSEADDR) and closes it again.
std::string BindError(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return std::string("cannot resolve ") + host + ": " + gai_strerror(rc);
  }
  std::string why = "cannot bind to " + host + ":" + service;
  const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd < 0) {
    why += std::string(": ") + std::strerror(errno);
  } else {
    SetReuseAddressOnly(fd);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 || listen(fd, 1) != 0) {
      why += ": " + std::to_string(errno) + " (" + std::strerror(errno) + ")";
    }
    close(fd);
  }
  freeaddrinfo(found);
  return why;
}

}  // namespace

struct Metrics::State {
  State()
      : jobs(prometheus::BuildCounter()
                 .Name("ellm_jobs_total")
                 .Help("Jobs finished, by pipeline and outcome (succeeded or failed).")
                 .Register(registry)),
        failures(prometheus::BuildCounter()
                     .Name("ellm_job_failures_total")
                     .Help("Failed job runs and invalid messages: transient (retried up to "
                           "jobs.max_attempts) or permanent (failed and dead-lettered at once).")
                     .Register(registry)),
        failures_transient(failures.Add({{"kind", "transient"}})),
        failures_permanent(failures.Add({{"kind", "permanent"}})),
        job_duration(prometheus::BuildHistogram()
                         .Name("ellm_job_duration_seconds")
                         .Help("Wall-clock time of finished jobs, by pipeline.")
                         .Register(registry)),
        prefill_rate(prometheus::BuildGauge()
                         .Name("ellm_prefill_tokens_per_second")
                         .Help("Prompt tokens per second of the last generation's prefill.")
                         .Register(registry)
                         .Add({})),
        decode_rate(prometheus::BuildGauge()
                        .Name("ellm_decode_tokens_per_second")
                        .Help("Generated tokens per second of the last generation's decode.")
                        .Register(registry)
                        .Add({})),
        prompt_tokens(prometheus::BuildCounter()
                          .Name("ellm_prompt_tokens_total")
                          .Help("Prompt tokens prefilled.")
                          .Register(registry)
                          .Add({})),
        generated_tokens(prometheus::BuildCounter()
                             .Name("ellm_generated_tokens_total")
                             .Help("Tokens generated.")
                             .Register(registry)
                             .Add({})),
        kv_bytes(prometheus::BuildGauge()
                     .Name("ellm_kv_bytes")
                     .Help("KV cache bytes, resident in memory or spilled to disk.")
                     .Register(registry)),
        kv_resident(kv_bytes.Add({{"state", "resident"}})),
        kv_spilled(kv_bytes.Add({{"state", "spilled"}})),
        consumer_lag(prometheus::BuildGauge()
                         .Name("ellm_consumer_lag_messages")
                         .Help("Messages on the jobs topic not yet consumed by this group.")
                         .Register(registry)
                         .Add({})),
        retries(prometheus::BuildCounter()
                    .Name("ellm_job_retries_total")
                    .Help("Deliveries handed back to be delivered again after a back-off "
                          "(transient failures, cancelled jobs, events not yet sent).")
                    .Register(registry)
                    .Add({})),
        dead_letters(prometheus::BuildCounter()
                         .Name("ellm_dead_letters_total")
                         .Help("Copies of failed jobs' messages sent to the dead-letter topic.")
                         .Register(registry)
                         .Add({})),
        replacements(prometheus::BuildCounter()
                         .Name("ellm_client_replacements_total")
                         .Help("Kafka clients (consumer or producer) replaced after a fatal "
                               "client error.")
                         .Register(registry)),
        consumer_replacements(replacements.Add({{"client", "consumer"}})),
        producer_replacements(replacements.Add({{"client", "producer"}})),
        transactions_aborted(prometheus::BuildCounter()
                                 .Name("ellm_kafka_transactions_aborted_total")
                                 .Help("Kafka transactions (a job's events with its offset) "
                                       "ended without their commit; sent again in the next.")
                                 .Register(registry)
                                 .Add({})),
        progress_positions(prometheus::BuildGauge()
                               .Name("ellm_job_progress_positions")
                               .Help("Prompt positions prefilled so far in the running job's "
                                     "current generation; 0 when idle.")
                               .Register(registry)
                               .Add({})),
        progress_target(prometheus::BuildGauge()
                            .Name("ellm_job_progress_target_positions")
                            .Help("Prompt positions the running job's current prefill feeds; "
                                  "0 when idle.")
                            .Register(registry)
                            .Add({})) {
    prometheus::BuildGauge()
        .Name("ellm_up")
        .Help("1 while ellmd is running.")
        .Register(registry)
        .Add({})
        .Set(1);
  }

  // Stops the gate and the server first: handlers read everything below.
  ~State() {
    if (gate != nullptr) {
      gate->Stop();
      if (gating.joinable()) gating.join();
    }
    if (server != nullptr) {
      server->stop();
      if (serving.joinable()) serving.join();
    }
  }

  std::string Exposition() const {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry.Collect());
    std::function<std::string()> more;
    {
      std::lock_guard<std::mutex> lock(extra_mu);
      more = extra;
    }
    std::string text = out.str();
    if (more) text += more();
    return text;
  }

  // Declaration order is construction order: the registry before the
  // families registered in it, each family before the metrics it holds.
  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& jobs;
  prometheus::Family<prometheus::Counter>& failures;
  prometheus::Counter& failures_transient;
  prometheus::Counter& failures_permanent;
  prometheus::Family<prometheus::Histogram>& job_duration;
  prometheus::Gauge& prefill_rate;
  prometheus::Gauge& decode_rate;
  prometheus::Counter& prompt_tokens;
  prometheus::Counter& generated_tokens;
  prometheus::Family<prometheus::Gauge>& kv_bytes;
  prometheus::Gauge& kv_resident;
  prometheus::Gauge& kv_spilled;
  prometheus::Gauge& consumer_lag;
  prometheus::Counter& retries;
  prometheus::Counter& dead_letters;
  prometheus::Family<prometheus::Counter>& replacements;
  prometheus::Counter& consumer_replacements;
  prometheus::Counter& producer_replacements;
  prometheus::Counter& transactions_aborted;
  prometheus::Gauge& progress_positions;
  prometheus::Gauge& progress_target;
  // Why /readyz and /healthz fail; empty: they pass.
  mutable std::mutex probes_mu;
  std::string not_ready = "starting";
  std::string unhealthy;
  mutable std::mutex extra_mu;
  std::function<std::string()> extra;       // appended to /metrics (SetExtraExposition)
  std::unique_ptr<httplib::Server> server;  // on a private loopback port
  std::thread serving;
  std::unique_ptr<server::FrontGate> gate;  // the public socket
  std::thread gating;
  int port = 0;
};

namespace {

// Starts the server on `listen` ("host:port", checked by
// MetricsConfig::Validate): GET (and HEAD) of /metrics, /healthz and /readyz;
// other paths 404, other methods 405. Two threads: scrapes and probes are
// rare and each is answered in microseconds. The public socket is the API's
// front gate (server/front_gate.h), so silent or slow connections cannot
// hold those two threads and fail the liveness probe.
Status StartServer(const std::string& listen, Metrics::State& state) {
  const size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const int port = std::stoi(listen.substr(colon + 1));
  auto server = std::make_unique<httplib::Server>();
  server->set_socket_options(SetReuseAddressOnly);
  server->new_task_queue = [] { return new httplib::ThreadPool(2); };
  server->set_read_timeout(10, 0);
  server->set_write_timeout(10, 0);
  const auto text = [](httplib::Response& res, int status, const std::string& body,
                       const char* type = kTextContentType) {
    res.status = status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(body, type);
  };
  const Metrics::State* st = &state;
  server->Get("/metrics", [st, text](const httplib::Request&, httplib::Response& res) {
    text(res, 200, st->Exposition(), kMetricsContentType);
  });
  server->Get("/healthz", [st, text](const httplib::Request&, httplib::Response& res) {
    std::string problem;
    {
      std::lock_guard<std::mutex> lock(st->probes_mu);
      problem = st->unhealthy;
    }
    if (problem.empty()) return text(res, 200, "ok\n");
    text(res, 503, "unhealthy: " + problem + "\n");
  });
  server->Get("/readyz", [st, text](const httplib::Request&, httplib::Response& res) {
    std::string problem;
    {
      std::lock_guard<std::mutex> lock(st->probes_mu);
      problem = st->not_ready;
    }
    if (problem.empty()) return text(res, 200, "ready\n");
    text(res, 503, "not ready: " + problem + "\n");
  });
  server->set_error_handler([text](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) text(res, 404, "not found\n");
  });
  server->set_exception_handler(
      [text](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        text(res, 500, "internal error: " + what + "\n");
      });
  const int inner = server->bind_to_any_port("127.0.0.1");
  if (inner <= 0) return UnavailableError("metrics: cannot listen on 127.0.0.1 (any port)");
  server::FrontGateOptions g;
  g.host = host;
  g.port = port;
  g.inner_port = inner;
  g.head.max_body_bytes = 64 << 10;
  g.header_timeout_s = 5;
  g.stall_timeout_s = 10;
  g.max_connections = 256;
  g.max_unread_per_client = 16;
  g.max_buffered_bytes = 4u << 20;
  StatusOr<std::unique_ptr<server::FrontGate>> gate = server::FrontGate::Bind(std::move(g));
  if (!gate.ok()) {
    return UnavailableError("metrics: cannot listen on '" + listen + "': " + BindError(host, port) +
                            " (check metrics.listen)");
  }
  server::FrontGate* front = gate->get();
  // Only the gate's own connections reach the handlers.
  server->set_pre_routing_handler(
      [text, front](const httplib::Request& req, httplib::Response& res) {
        if (!front->IsGatePort(req.remote_port)) {
          text(res, 403, "forbidden: connect to metrics.listen\n");
          return httplib::Server::HandlerResponse::Handled;
        }
        if (req.method == "GET" || req.method == "HEAD") {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        res.set_header("Allow", "GET, HEAD");
        text(res, 405, "method not allowed\n");
        return httplib::Server::HandlerResponse::Handled;
      });
  state.port = front->port();
  httplib::Server* raw = server.get();
  state.server = std::move(server);  // from here on ~State stops it
  state.gate = std::move(*gate);
  // The threads inherit this thread's signal mask (the caller blocks the
  // daemon's signals first).
  state.serving = std::thread([raw] { raw->listen_after_bind(); });
  // stop() does nothing before the accept loop runs: wait for it, so that
  // destroying the Metrics right away still stops the thread.
  for (int i = 0; i < 5000 && !raw->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  state.gating = std::thread([front] { front->Run(); });
  return OkStatus();
}

}  // namespace

Metrics::Metrics(std::unique_ptr<State> state) : state_(std::move(state)) {}

Metrics::~Metrics() = default;

StatusOr<std::unique_ptr<Metrics>> Metrics::Start(const app::MetricsConfig& config) {
  ELLM_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<State> state;
  try {
    state = std::make_unique<State>();
  } catch (const std::exception& e) {
    return InternalError(std::string("metrics: cannot register the metric families: ") + e.what());
  }
  if (config.enabled) {
    // A client hanging up mid-response must not kill the daemon.
    std::signal(SIGPIPE, SIG_IGN);
    ELLM_RETURN_IF_ERROR(StartServer(config.listen, *state));
  }
  return std::unique_ptr<Metrics>(new Metrics(std::move(state)));
}

int Metrics::port() const { return state_->port; }

void Metrics::JobFinished(const std::string& pipeline, bool succeeded, double seconds) {
  try {
    state_->jobs.Add({{"pipeline", pipeline}, {"status", succeeded ? "succeeded" : "failed"}})
        .Increment();
    state_->job_duration.Add({{"pipeline", pipeline}}, DurationBuckets()).Observe(seconds);
  } catch (const std::exception&) {
    // Only allocation can fail here (the label names are ours and valid); a
    // lost sample must not fail the job that produced it.
  }
}

void Metrics::JobFailure(bool transient) {
  (transient ? state_->failures_transient : state_->failures_permanent).Increment();
}

void Metrics::Generation(int64_t prompt_tokens, int64_t prefill_ms, int64_t generated_tokens,
                         int64_t decode_ms) {
  if (prompt_tokens > 0) state_->prompt_tokens.Increment(static_cast<double>(prompt_tokens));
  if (generated_tokens > 0) {
    state_->generated_tokens.Increment(static_cast<double>(generated_tokens));
  }
  if (prompt_tokens > 0 && prefill_ms > 0) {
    state_->prefill_rate.Set(static_cast<double>(prompt_tokens) * 1000.0 /
                             static_cast<double>(prefill_ms));
  }
  if (generated_tokens > 0 && decode_ms > 0) {
    state_->decode_rate.Set(static_cast<double>(generated_tokens) * 1000.0 /
                            static_cast<double>(decode_ms));
  }
}

void Metrics::SetKvBytes(int64_t resident, int64_t spilled) {
  state_->kv_resident.Set(static_cast<double>(resident));
  state_->kv_spilled.Set(static_cast<double>(spilled));
}

void Metrics::SetConsumerLag(int64_t messages) {
  state_->consumer_lag.Set(static_cast<double>(messages));
}

void Metrics::JobRetried() { state_->retries.Increment(); }

void Metrics::DeadLettered() { state_->dead_letters.Increment(); }

void Metrics::ClientReplaced(Client client) {
  (client == Client::kConsumer ? state_->consumer_replacements : state_->producer_replacements)
      .Increment();
}

void Metrics::TransactionAborted() { state_->transactions_aborted.Increment(); }

void Metrics::SetJobProgress(int64_t positions, int64_t target) {
  state_->progress_positions.Set(static_cast<double>(std::max<int64_t>(positions, 0)));
  state_->progress_target.Set(static_cast<double>(std::max<int64_t>(target, 0)));
}

namespace {

// One line: a reason with a newline would break the probe's one-line body.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

void Metrics::SetReadiness(const std::string& problem) {
  std::lock_guard<std::mutex> lock(state_->probes_mu);
  state_->not_ready = OneLine(problem);
}

void Metrics::SetHealth(const std::string& problem) {
  std::lock_guard<std::mutex> lock(state_->probes_mu);
  state_->unhealthy = OneLine(problem);
}

void Metrics::SetExtraExposition(std::function<std::string()> extra) {
  std::lock_guard<std::mutex> lock(state_->extra_mu);
  state_->extra = std::move(extra);
}

std::string Metrics::TextExposition() const {
  try {
    return state_->Exposition();
  } catch (const std::exception& e) {
    return std::string("# metrics unavailable: ") + e.what() + "\n";
  }
}

}  // namespace ellm::daemon
