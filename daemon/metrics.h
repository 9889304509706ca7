// Metrics and health of ellmd on a local HTTP port (off unless configured).
//
// GET /metrics  Prometheus text exposition format (version 0.0.4):
//   ellm_up                                       gauge, always 1
//   ellm_jobs_total{pipeline,status}              counter, status = succeeded | failed
//   ellm_job_failures_total{kind}                 counter, kind = transient | permanent
//   ellm_job_duration_seconds{pipeline}           histogram, buckets 1 s .. 1 h
//   ellm_prefill_tokens_per_second                gauge, the last generation's rate
//   ellm_decode_tokens_per_second                 gauge, the last generation's rate
//   ellm_prompt_tokens_total                      counter
//   ellm_generated_tokens_total                   counter
//   ellm_kv_bytes{state="resident"|"spilled"}     gauge
//   ellm_consumer_lag_messages                    gauge
//   ellm_job_retries_total                        counter, deliveries handed back to be
//                                                 retried after a back-off (kRetryLater)
//   ellm_dead_letters_total                       counter, copies sent to the dead-letter topic
//   ellm_client_replacements_total{client}        counter, client = consumer | producer:
//                                                 Kafka clients replaced after a fatal error
//   ellm_kafka_transactions_aborted_total         counter, transactions (a job's events and
//                                                 offset) ended without their commit
//   ellm_job_progress_positions                   gauge, prompt positions prefilled so far in
//                                                 the running job's current generation
//   ellm_job_progress_target_positions            gauge, the positions that prefill feeds
//                                                 (both 0 when idle)
// Progress is two gauges rather than one ratio: the ratio is a division in
// a query, but the sizes (is it a 500- or a 30,000-token prefill?) and the
// live rate (deriv of the positions) cannot be recovered from it. Not
// ..._total: that suffix is the counters' (promtool flags a gauge with it).
// GET /healthz  200 "ok" while healthy (the default), else 503 "unhealthy: <why>".
// GET /readyz   200 "ready" while SetReadiness("") holds, else 503 "not ready: <why>"
//               (at first "not ready: starting").
// Any other path is 404; methods other than GET and HEAD are 405.
//
// With the HTTP API on (http:), /metrics also carries its ellm_http_*
// families (SetExtraExposition).
//
// The metric families come from prometheus-cpp (core); the HTTP server is
// cpp-httplib, the API server's library (prometheus-cpp's Exposer serves
// only registries and so cannot answer /healthz and /readyz). Neither
// library's exceptions or types leave metrics.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ellm/app/config.h"
#include "ellm/base/status.h"

namespace ellm::daemon {

class Metrics {
 public:
  // Starts the HTTP server on config.listen when config.enabled; otherwise
  // returns an object that records everything but serves nothing (port() is
  // 0). Errors (address in use, an address that cannot be bound) name the
  // address and the kernel's reason: "metrics: cannot listen on
  // '127.0.0.1:9464': cannot bind to 127.0.0.1:9464: 98 (Address already in
  // use) (check metrics.listen)". An invalid config.listen is
  // InvalidArgument. Call after blocking signals: the server's threads
  // inherit the caller's signal mask. Starting also sets SIGPIPE to ignored
  // for the process (a client hanging up must not kill us).
  static StatusOr<std::unique_ptr<Metrics>> Start(const app::MetricsConfig& config);
  // Stops the server; returns once no request handler is running.
  ~Metrics();

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The bound port (the chosen one when config.listen asked for port 0);
  // 0 when disabled.
  int port() const;

  // All recording methods are thread-safe; they are called from the job
  // worker thread and the consumer thread while the server reads them.

  // One finished job: counts it under (pipeline, succeeded|failed) and
  // observes `seconds` in the duration histogram of `pipeline`.
  void JobFinished(const std::string& pipeline, bool succeeded, double seconds);
  // One failure: a run that failed transiently (it runs again, or gives up
  // after jobs.max_attempts) or permanently (stored at once, including
  // deadline_exceeded), or an invalid message (permanent).
  void JobFailure(bool transient);
  // One generation's token counts and timings. Adds the counts to the token
  // counters; sets a rate gauge only when its tokens and time are both > 0
  // (a negative count is ignored).
  void Generation(int64_t prompt_tokens, int64_t prefill_ms, int64_t generated_tokens,
                  int64_t decode_ms);
  void SetKvBytes(int64_t resident, int64_t spilled);
  void SetConsumerLag(int64_t messages);
  // One delivery handed back to the consumer, to be delivered again after
  // its back-off (a transient failure, a cancelled job, an event not sent).
  void JobRetried();
  // One copy of a failed job's message sent to the dead-letter topic.
  void DeadLettered();
  enum class Client { kConsumer, kProducer };
  // One Kafka client replaced after a fatal error.
  void ClientReplaced(Client client);
  // One Kafka transaction ended without its commit (its events are sent
  // again in the next one).
  void TransactionAborted();
  // The running job's prefill: `positions` of `target` fed so far; (0, 0)
  // when idle. A negative value is taken as 0.
  void SetJobProgress(int64_t positions, int64_t target);
  // /readyz: 200 "ready" when `problem` is empty, else 503 "not ready:
  // <problem>" (one line, such as "draining"). Starts "starting".
  void SetReadiness(const std::string& problem);
  // /healthz: 200 "ok" when `problem` is empty, else 503 "unhealthy:
  // <problem>" (one line). Starts healthy.
  void SetHealth(const std::string& problem);

  // Text appended to /metrics (more families, in the exposition format),
  // asked for at each scrape; empty function: none. Must be safe to call
  // from the server's threads until replaced or the Metrics is destroyed.
  void SetExtraExposition(std::function<std::string()> extra);

  // What GET /metrics returns now (also when disabled).
  std::string TextExposition() const;

  struct State;  // defined in metrics.cc

 private:
  explicit Metrics(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
};

}  // namespace ellm::daemon
