#include "ellm/app/run_job.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <new>
#include <thread>

namespace ellm::app {
namespace {

void Log(const RunJobOptions& options, LogLevel level, const std::string& job_id,
         const std::string& line) {
  if (options.log) options.log(level, "job=" + job_id + " " + line);
}

// The start of `text` on one log line: at most `max_bytes` of it (never
// cutting a UTF-8 sequence), newlines, tabs, backslashes and other control
// bytes escaped, "..." when cut.
std::string Excerpt(const std::string& text, size_t max_bytes) {
  size_t end = std::min(text.size(), max_bytes);
  while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  std::string out;
  for (size_t i = 0; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return end < text.size() ? out + "..." : out;
}

// Characters (UTF-8 code points) of `text`.
int64_t Chars(const std::string& text) {
  int64_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Processor::Run, with std::bad_alloc (out of memory anywhere below)
// turned into a transient failure: the memory is freed as the stack
// unwinds, and the next attempt may find enough. Any other exception is a
// bug below that one document triggered: the job fails (`internal`, not
// retried: the same document would trigger it again) and the process goes
// on serving other jobs.
pipelines::PipelineResult RunGuarded(pipelines::Processor& processor,
                                     const pipelines::PipelineRequest& request,
                                     const std::atomic<bool>& cancel) {
  try {
    return processor.Run(request, cancel);
  } catch (const std::bad_alloc&) {
    pipelines::PipelineResult r = pipelines::PipelineResult::Failed(
        "resource_exhausted", "out of memory while running the pipeline (std::bad_alloc)");
    r.transient = true;
    return r;
  } catch (const std::exception& e) {
    return pipelines::PipelineResult::Failed(
        "internal", std::string("the pipeline failed on this document (a bug: ") + e.what() + ")");
  }
}

// RunGuarded, stopped by `cancel` or once `timeout` (> 0) has passed,
// whichever comes first; `*timed_out` says whether the deadline stopped it.
// The processor sees one flag: a watcher thread raises it for either cause
// (checked every 20 ms, well below the time a processor takes to notice).
pipelines::PipelineResult RunWithin(pipelines::Processor& processor,
                                    const pipelines::PipelineRequest& request,
                                    const std::atomic<bool>& cancel, std::chrono::seconds timeout,
                                    bool* timed_out) {
  *timed_out = false;
  if (timeout.count() <= 0) return RunGuarded(processor, request, cancel);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watcher([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; })) {
      if (stop.load()) continue;
      if (cancel.load()) {
        stop = true;
      } else if (std::chrono::steady_clock::now() >= deadline) {
        *timed_out = true;
        stop = true;
      }
    }
  });
  pipelines::PipelineResult r = RunGuarded(processor, request, stop);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watcher.join();
  return r;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

// Step 3 for a run that failed (`r` has an error_code). A transient failure
// with options.retry_transient before the last attempt queues the job again
// (kQueued; kRunning if a new owner has begun another attempt meanwhile);
// any other failure is stored (kFailed), a transient one of the last
// attempt as attempts_exhausted naming it.
StatusOr<store::JobStatus> SettleFailure(store::JobStore& store, const store::NewJob& job,
                                         int64_t attempt, const pipelines::PipelineResult& r,
                                         const RunJobOptions& options) {
  const std::string why = r.error_code + ": " + r.error;
  std::string code = r.error_code, message = r.ErrorWithAnswer();
  if (r.transient && options.retry_transient) {
    const std::string of = std::to_string(attempt) + " of " + std::to_string(store.max_attempts());
    if (attempt < store.max_attempts()) {
      // The machine was short of something (disk, memory, processes): the
      // job keeps its place in the queue and this attempt is used up.
      ELLM_ASSIGN_OR_RETURN(bool requeued, store.Requeue(job.id, attempt, why));
      Log(options, LogLevel::kWarn, job.id,
          "transient failure on attempt " + of + " (" + why + "); it will run again");
      return requeued ? store::JobStatus::kQueued : store::JobStatus::kRunning;
    }
    ELLM_RETURN_IF_ERROR(store.AddEvent(job.id, "transient_error",
                                        "attempt " + std::to_string(attempt) + ": " + why));
    code = "attempts_exhausted";
    message = "gave up after " + std::to_string(attempt) +
              " attempts (jobs.max_attempts); the last failed with a transient error: " + why;
  }
  // The answer quoted in the stored message is document content: in the
  // log at debug level only (log.level: debug), escaped onto one line.
  Log(options, code == r.error_code ? LogLevel::kWarn : LogLevel::kError, job.id,
      "failed (" + code + "): " + (code == r.error_code ? r.error : message));
  if (!r.error_answer.empty()) {
    Log(options, LogLevel::kDebug, job.id, "the answer began: " + Excerpt(r.error_answer, 200));
  }
  ELLM_RETURN_IF_ERROR(store.Fail(job, code, message).status());
  return store::JobStatus::kFailed;
}

}  // namespace

JobTimeoutLimit JobTimeout(int64_t config_s, std::optional<int64_t> message_s) {
  if (message_s && *message_s > 0 && (config_s <= 0 || *message_s < config_s)) {
    return {std::chrono::seconds(*message_s), "the message's timeout_s"};
  }
  if (config_s > 0) return {std::chrono::seconds(config_s), "jobs.timeout_s"};
  return {};
}

Status PublishFinished(store::JobStore& store, const std::string& job_id,
                       ResultPublisher& publisher, const RunJobOptions& options) {
  auto read = store.Get(job_id);
  if (!read.ok() || !read->has_value()) {
    Status st = read.ok() ? NotFoundError("missing") : read.status();
    Log(options, LogLevel::kError, job_id,
        "cannot read it back: " + (read.ok() ? st.message() : st.ToString()));
    return st;
  }
  const store::JobRecord& job = **read;
  ELLM_ASSIGN_OR_RETURN(bool given_up, store.HasEvent(job_id, "publish_failed"));
  // Nothing more is sent for it; the commit still marks its message consumed.
  if (given_up) return publisher.Commit();
  // A send that failed (what was sent with it is discarded first). A broker
  // away, slow or busy is waited out however long it takes; any other
  // refusal (a message too large, a topic it will not write) is counted,
  // and past the bound the job is failed as publish_failed and the
  // partition moves on.
  auto undelivered = [&](const std::string& what, const Status& st) -> Status {
    publisher.Abort();
    Log(options, LogLevel::kWarn, job_id,
        what + (what == "result event" ? " not published yet: " : " not sent yet: ") +
            st.ToString());
    if (st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kResourceExhausted ||
        st.code() == StatusCode::kDeadlineExceeded) {
      return st;
    }
    ELLM_RETURN_IF_ERROR(store.AddEvent(job_id, "publish_error", what + ": " + st.ToString()));
    ELLM_ASSIGN_OR_RETURN(int64_t errors, store.CountEvents(job_id, "publish_error"));
    if (options.max_publish_attempts <= 0 || errors < options.max_publish_attempts) return st;
    const std::string why = what + " could not be delivered after " + std::to_string(errors) +
                            " attempts: " + st.ToString();
    ELLM_RETURN_IF_ERROR(store.MarkPublishFailed(job_id, why));
    Log(options, LogLevel::kError, job_id, "publish_failed: " + why);
    return publisher.Commit();
  };
  // Events sent, recorded at once or (atomic publisher) after the commit.
  std::vector<std::pair<std::string, std::string>> sent;
  auto record = [&](const std::string& kind, const std::string& where) -> Status {
    if (publisher.atomic()) {
      sent.emplace_back(kind, where);
      return OkStatus();
    }
    return store.AddEvent(job_id, kind, where);
  };
  if (job.status == store::JobStatus::kFailed) {
    ELLM_ASSIGN_OR_RETURN(bool dead_lettered, store.HasEvent(job_id, "dead_lettered"));
    if (!dead_lettered) {
      auto where = publisher.DeadLetter(job_id, job.error_code, job.error_message);
      Status st = where.ok() ? record("dead_lettered", *where) : where.status();
      if (!st.ok()) return undelivered("dead-letter copy", st);
    }
  }
  ELLM_ASSIGN_OR_RETURN(bool published, store.HasEvent(job_id, "published"));
  if (!published) {
    auto where = publisher.Publish(job);
    Status st = where.ok() ? record("published", *where) : where.status();
    if (!st.ok()) return undelivered("result event", st);
  }
  if (Status committed = publisher.Commit(); !committed.ok()) {
    Log(options, LogLevel::kWarn, job_id, "events not committed yet: " + committed.ToString());
    return committed;
  }
  // Committed: a crash before these records leaves the store short of them,
  // never the topics (the message is consumed, so it does not come again).
  for (const auto& [kind, where] : sent) ELLM_RETURN_IF_ERROR(store.AddEvent(job_id, kind, where));
  return OkStatus();
}

JobRun RunJob(store::JobStore& store, pipelines::Processor& processor, const store::NewJob& job,
              const pipelines::PipelineRequest& request, const std::atomic<bool>& cancel,
              const RunJobOptions& options) {
  JobRun run;
  // Step 4 for every path that reaches a stored outcome.
  auto finish = [&]() -> JobRun& {
    if (options.publisher) run.error = PublishFinished(store, job.id, *options.publisher, options);
    run.outcome = run.error.ok() ? JobOutcome::kDone : JobOutcome::kRetryLater;
    return run;
  };
  auto retry = [&](Status error) -> JobRun& {
    Log(options, LogLevel::kError, job.id, error.ToString());
    run.error = std::move(error);
    run.outcome = JobOutcome::kRetryLater;
    return run;
  };

  auto begun = store.Begin(job);
  if (!begun.ok()) return retry(begun.status());
  run.decision = begun->decision;
  run.status = begun->status;
  run.attempt = begun->attempt;
  switch (begun->decision) {
    case store::BeginDecision::kAlreadyDone:
      Log(options, LogLevel::kInfo, job.id,
          "delivered again; already " + std::string(store::JobStatusName(begun->status)));
      return finish();
    case store::BeginDecision::kGaveUp:
      Log(options, LogLevel::kError, job.id,
          "failed: started " + std::to_string(begun->attempt) + " times without finishing");
      return finish();
    case store::BeginDecision::kRun:
      break;
  }

  Log(options, LogLevel::kInfo, job.id,
      "pipeline=" + job.pipeline + " attempt=" + std::to_string(begun->attempt) +
          " documents=" + std::to_string(request.documents.size()) + " from " + job.source.topic +
          "[" + std::to_string(job.source.partition) + "]@" + std::to_string(job.source.offset));
  if (options.status) options.status("running job " + job.id + " (" + job.pipeline + ")");
  if (!options.crash_in_job.empty() && options.crash_in_job == job.id) {
    Log(options, LogLevel::kWarn, job.id, "ELLM_TEST_CRASH_IN_JOB: killing the process in 200 ms");
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      raise(SIGKILL);
    }).detach();
  }
  auto started = std::chrono::steady_clock::now();
  bool timed_out = false;
  if (options.progress) {
    processor.set_progress(
        [&](const pipelines::Progress& p) { options.progress(job.id, job.pipeline, p); });
  }
  run.result = RunWithin(processor, request, cancel, options.timeout, &timed_out);
  if (options.progress) processor.set_progress(nullptr);
  run.ran = true;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.status) options.status("idle");
  if (timed_out && run.result.cancelled) {
    // Stopped by its deadline, not by a shutdown: the same job would run as
    // long again, so it fails for good.
    run.result = pipelines::PipelineResult::Failed(
        "deadline_exceeded",
        "the job ran longer than its limit of " + std::to_string(options.timeout.count()) + " s (" +
            options.timeout_source + ") and was stopped after " + Seconds(run.seconds) + " s");
  }
  const pipelines::PipelineResult& r = run.result;
  if (r.output && options.on_result) options.on_result(*r.output);
  if (r.cancelled) {
    // A cancelled run (shutdown, lost partition) gives its attempt back.
    auto released = store.Release(job.id, begun->attempt, "was cancelled");
    if (released.ok() && *released) run.status = store::JobStatus::kQueued;
    if (!released.ok()) Log(options, LogLevel::kWarn, job.id, released.status().ToString());
    Log(options, LogLevel::kWarn, job.id, "cancelled; it will run again");
    run.outcome = JobOutcome::kRetryLater;
    return run;
  }
  if (!r.output) {
    if (options.on_failure) options.on_failure(job.pipeline, r.transient);
    auto settled = SettleFailure(store, job, begun->attempt, r, options);
    if (!settled.ok()) return retry(settled.status());
    run.status = *settled;
    if (run.status != store::JobStatus::kFailed) {
      run.error = UnavailableError("transient failure: " + r.error_code + ": " + r.error);
      run.outcome = JobOutcome::kRetryLater;
      return run;
    }
  }
  if (options.on_finished) options.on_finished(job.pipeline, r.output.has_value(), run.seconds);

  if (r.output) {
    auto stored = store.Succeed(job.id, ToDocumentRecords(*r.output), ToResultRecord(*r.output));
    if (!stored.ok()) return retry(stored.status());
    if (options.crash_after_store_commit) {
      Log(options, LogLevel::kWarn, job.id, "ELLM_TEST_CRASH_AFTER_STORE: killing the process now");
      raise(SIGKILL);
    }
    run.status = store::JobStatus::kSucceeded;
    const pipelines::PipelineOutput& o = *r.output;
    Log(options, LogLevel::kInfo, job.id,
        "succeeded (" + o.strategy + ", " + std::to_string(o.prompt_tokens) + " prompt + " +
            std::to_string(o.generated_tokens) + " generated tokens, " +
            std::to_string(Chars(o.output_text)) + " chars)");
    Log(options, LogLevel::kDebug, job.id, "output: " + Excerpt(o.output_text, 200));
  }
  return finish();
}

pipelines::PipelineRequest ToPipelineRequest(const ingest::JobMessage& message) {
  return {message.id, message.documents, message.params_json};
}

store::ResultRecord ToResultRecord(const pipelines::PipelineOutput& o) {
  store::ResultRecord r;
  r.output_text = o.output_text;
  r.output_json = o.output_json;
  r.model_fingerprint = o.model_fingerprint;
  r.pipeline_name = o.pipeline_name;
  r.pipeline_version = o.pipeline_version;
  r.strategy = o.strategy;
  r.prompt_tokens = o.prompt_tokens;
  r.generated_tokens = o.generated_tokens;
  r.prefill_ms = o.prefill_ms;
  r.decode_ms = o.decode_ms;
  r.constraint_ms = o.constraint_ms;
  return r;
}

std::vector<store::DocumentRecord> ToDocumentRecords(const pipelines::PipelineOutput& output) {
  std::vector<store::DocumentRecord> records;
  records.reserve(output.documents.size());
  for (const pipelines::DocumentSummary& d : output.documents) {
    store::DocumentRecord r{d.ordinal, d.label, d.sha256, d.page_count, d.token_count, {}};
    for (const pipelines::OcrPageSummary& p : d.ocr_pages) {
      r.ocr_pages.push_back({p.page, p.confidence, p.note});
    }
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace ellm::app
