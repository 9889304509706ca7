// The prometheus-cpp and civetweb adapter behind metrics.h. Every exception
// either library throws is caught here: at start-up it becomes a Status; while
// running, a metric that cannot be recorded is dropped and a request that
// cannot be answered gets a 500 (civetweb is C, so nothing may unwind into it).
#include "metrics.h"

#include <civetweb.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

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

// Sends a complete response. `head`: headers only (a HEAD request).
int Reply(mg_connection* conn, int status, const char* content_type, const std::string& body,
          bool head) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", content_type, -1);
  std::string length = std::to_string(body.size());
  mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
  mg_response_header_add(conn, "Cache-Control", "no-store", -1);
  if (status == 405) mg_response_header_add(conn, "Allow", "GET, HEAD", -1);
  mg_response_header_send(conn);
  if (!head && !body.empty()) mg_write(conn, body.data(), body.size());
  return status;
}

// civetweb says why mg_start2 failed ("cannot bind to 127.0.0.1:9464: 98
// (Address already in use)") only through the log_message callback, called on
// the starting thread; StartServer points this at a vector for that call.
// Messages on civetweb's own threads (a client hanging up) are not
// actionable and are dropped.
thread_local std::vector<std::string>* start_messages = nullptr;

int OnLogMessage(const mg_connection*, const char* message) {
  try {
    if (start_messages != nullptr && message != nullptr) start_messages->emplace_back(message);
  } catch (const std::exception&) {
    // Out of memory: the summary from mg_error_data still names the failure.
  }
  return 1;  // civetweb writes nothing itself
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
                         .Add({})) {
    prometheus::BuildGauge()
        .Name("ellm_up")
        .Help("1 while ellmd is running.")
        .Register(registry)
        .Add({})
        .Set(1);
  }

  // Stops the server first: handlers read everything below.
  ~State() {
    if (server != nullptr) mg_stop(server);
  }

  std::string Exposition() const {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry.Collect());
    return out.str();
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
  std::atomic<bool> ready{false};
  std::atomic<bool> healthy{true};
  mg_context* server = nullptr;
  int port = 0;
};

namespace {

// The one request handler, registered for every path. Runs on civetweb's
// threads; must not throw.
int HandleRequest(mg_connection* conn, void* cbdata) {
  const auto& state = *static_cast<const Metrics::State*>(cbdata);
  const mg_request_info* request = mg_get_request_info(conn);
  const char* method = request->request_method != nullptr ? request->request_method : "";
  bool head = std::strcmp(method, "HEAD") == 0;
  try {
    if (!head && std::strcmp(method, "GET") != 0) {
      return Reply(conn, 405, kTextContentType, "method not allowed\n", head);
    }
    std::string path = request->local_uri != nullptr ? request->local_uri : "";
    if (path == "/metrics") {
      return Reply(conn, 200, kMetricsContentType, state.Exposition(), head);
    }
    if (path == "/healthz") {
      bool ok = state.healthy.load();
      return Reply(conn, ok ? 200 : 503, kTextContentType, ok ? "ok\n" : "unhealthy\n", head);
    }
    if (path == "/readyz") {
      bool ok = state.ready.load();
      return Reply(conn, ok ? 200 : 503, kTextContentType, ok ? "ready\n" : "not ready\n", head);
    }
    return Reply(conn, 404, kTextContentType, "not found\n", head);
  } catch (const std::exception& e) {
    return Reply(conn, 500, kTextContentType, std::string("internal error: ") + e.what() + "\n",
                 head);
  }
}

// Starts civetweb on `listen` with HandleRequest for every path.
Status StartServer(const std::string& listen, Metrics::State& state) {
  static std::once_flag init_once;
  std::call_once(init_once, [] { mg_init_library(0); });

  // Two threads: scrapes and probes are rare and each is answered in
  // microseconds. No document_root: civetweb serves no files.
  const char* options[] = {"listening_ports",    listen.c_str(), "num_threads", "2",
                           "request_timeout_ms", "10000",        nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = OnLogMessage;
  mg_init_data init;
  std::memset(&init, 0, sizeof(init));
  init.callbacks = &callbacks;
  init.user_data = &state;
  init.configuration_options = options;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error;
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);

  // civetweb's threads inherit this thread's signal mask; mg_start2 also sets
  // SIGPIPE to ignored for the process, so a client hanging up mid-response
  // cannot kill the daemon.
  std::vector<std::string> messages;
  start_messages = &messages;
  mg_context* server = mg_start2(&init, &error);
  start_messages = nullptr;
  if (server == nullptr) {
    // The first message is the cause; error_text is civetweb's summary.
    std::string why = !messages.empty()    ? messages.front()
                      : error_text[0] != 0 ? std::string(error_text)
                                           : std::string("civetweb could not start");
    return UnavailableError("metrics: cannot listen on '" + listen + "': " + why +
                            " (check metrics.listen)");
  }
  state.server = server;  // from here on ~State stops it
  mg_set_request_handler(server, "/", HandleRequest, &state);

  mg_server_port ports[4];
  std::memset(ports, 0, sizeof(ports));
  int n = mg_get_server_ports(server, 4, ports);
  if (n < 1 || ports[0].port <= 0) {
    return InternalError("metrics: listening on '" + listen + "' but civetweb reports no port");
  }
  state.port = ports[0].port;
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
  if (config.enabled) ELLM_RETURN_IF_ERROR(StartServer(config.listen, *state));
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

void Metrics::SetReady(bool ready) { state_->ready.store(ready); }

void Metrics::SetHealthy(bool healthy) { state_->healthy.store(healthy); }

std::string Metrics::TextExposition() const {
  try {
    return state_->Exposition();
  } catch (const std::exception& e) {
    return std::string("# metrics unavailable: ") + e.what() + "\n";
  }
}

}  // namespace ellm::daemon
