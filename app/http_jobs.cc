#include "ellm/app/http_jobs.h"

#include "ellm/store/job_json.h"

namespace ellm::app {
namespace {

using nlohmann::json;

server::JobAnswer Error(int status, const std::string& code, const std::string& message,
                        const std::string& type = "invalid_request_error") {
  return {status,
          {{"error",
            {{"message", message},
             {"type", type},
             {"param", nullptr},
             {"code", code.empty() ? json(nullptr) : json(code)}}}}};
}

server::JobAnswer StoreError(const Status& s) {
  return Error(500, "store_error", "the job store: " + s.ToString(), "server_error");
}

// The store keeps HTTP jobs apart from Kafka jobs (kHttpJobIdPrefix): the
// API speaks the client's ids, the store its own.
std::string StoredId(const std::string& api_id) {
  return std::string(ingest::kHttpJobIdPrefix) + api_id;
}

// A stored HTTP job as the API shows it.
json ApiJson(const store::JobRecord& job) {
  json out = store::JobToJson(job);
  std::string id = out.value("id", "");
  if (id.rfind(ingest::kHttpJobIdPrefix, 0) == 0) id.erase(0, ingest::kHttpJobIdPrefix.size());
  out["id"] = id;
  out["object"] = "job";
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<HttpJobQueue>> HttpJobQueue::Start(
    Runtime* runtime, std::string worker, std::function<void(LogLevel, const std::string&)> log) {
  std::unique_ptr<HttpJobQueue> q(new HttpJobQueue());
  q->runtime_ = runtime;
  q->worker_name_ = std::move(worker);
  q->log_ = std::move(log);
  const Config& c = runtime->config;
  q->limits_.allowed_roots = c.jobs.allowed_roots;
  q->limits_.max_inline_bytes = static_cast<size_t>(c.jobs.max_inline_bytes);
  q->limits_.max_documents = static_cast<size_t>(c.jobs.max_documents);
  for (const std::string& name : runtime->registry->Names()) q->limits_.pipelines.insert(name);
  store::JobStoreOptions options;
  options.max_attempts = c.jobs.max_attempts;
  ELLM_ASSIGN_OR_RETURN(q->api_store_, store::JobStore::Open(runtime->store_path, options));
  ELLM_ASSIGN_OR_RETURN(q->worker_store_, store::JobStore::Open(runtime->store_path, options));
  ELLM_ASSIGN_OR_RETURN(auto inbox, q->worker_store_->Inbox());
  for (auto& entry : inbox) q->queue_.push_back(std::move(entry));
  if (!q->queue_.empty() && q->log_) {
    q->log_(LogLevel::kWarn, std::to_string(q->queue_.size()) +
                                 " HTTP job(s) accepted before the last shutdown run again");
  }
  HttpJobQueue* self = q.get();
  q->worker_ = std::thread([self] { self->Work(); });
  return q;
}

HttpJobQueue::~HttpJobQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cancel_ = true;
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

size_t HttpJobQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

server::JobAnswer HttpJobQueue::Submit(json message, std::vector<Upload> uploads) {
  if (!message.is_object()) return Error(400, "invalid_message", "the job must be a JSON object");
  if (!uploads.empty()) {
    if (!message.contains("documents") || !message["documents"].is_array()) {
      message["documents"] = json::array();
    }
    for (const Upload& u : uploads) {
      message["documents"].push_back(
          {{"name", u.name}, {"content_base64", ingest::EncodeBase64(u.bytes)}});
    }
  }
  const std::string text = message.dump(-1, ' ', false, json::error_handler_t::replace);
  ingest::ParsedJob parsed = ingest::ParseJobMessage(text, "", limits_);
  if (!parsed.ok()) return Error(400, parsed.error_code, parsed.error);
  const ingest::JobMessage& m = parsed.message;
  const std::string stored_id = StoredId(m.id);
  store::NewJob job{stored_id,    m.pipeline,       m.params_json,
                    std::nullopt, {"http", -1, -1}, worker_name_};
  {
    std::lock_guard<std::mutex> lock(api_mu_);
    auto added = api_store_->Enqueue(job, text);
    if (!added.ok()) return StoreError(added.status());
    if (!*added) {
      auto existing = api_store_->Get(stored_id);
      if (!existing.ok()) return StoreError(existing.status());
      if (!existing->has_value()) return Error(409, "conflict", "job '" + m.id + "' vanished");
      return {200, ApiJson(**existing)};
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(stored_id, text);
  }
  cv_.notify_one();
  return {202, {{"id", m.id}, {"object", "job"}, {"status", "queued"}, {"pipeline", m.pipeline}}};
}

server::JobAnswer HttpJobQueue::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(api_mu_);
  auto job = api_store_->Get(StoredId(id));
  if (!job.ok()) return StoreError(job.status());
  if (!job->has_value()) return Error(404, "job_not_found", "no job '" + id + "'");
  return {200, ApiJson(**job)};
}

server::JobAnswer HttpJobQueue::List(const std::string& status, int limit) {
  std::optional<store::JobStatus> filter;
  if (!status.empty()) {
    for (store::JobStatus s : {store::JobStatus::kQueued, store::JobStatus::kRunning,
                               store::JobStatus::kSucceeded, store::JobStatus::kFailed}) {
      if (store::JobStatusName(s) == status) filter = s;
    }
    if (!filter) {
      return Error(400, "invalid_status",
                   "status '" + status + "' is not queued, running, succeeded or failed");
    }
  }
  std::lock_guard<std::mutex> lock(api_mu_);
  auto jobs = api_store_->List(filter, limit, ingest::kHttpJobIdPrefix);
  if (!jobs.ok()) return StoreError(jobs.status());
  json data = json::array();
  for (const store::JobRecord& j : *jobs) {
    json one = ApiJson(j);
    one.erase("events");
    data.push_back(std::move(one));
  }
  return {200, {{"object", "list"}, {"data", data}}};
}

void HttpJobQueue::Work() {
  for (;;) {
    std::pair<std::string, std::string> next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      next = queue_.front();
    }
    ingest::ParsedJob parsed = ingest::ParseJobMessage(next.second, "", limits_);
    store::NewJob job{next.first,   parsed.message.pipeline, parsed.message.params_json,
                      std::nullopt, {"http", -1, -1},        worker_name_};
    RunJobOptions options;
    options.log = log_;
    options.retry_transient = true;  // kRetryLater: it stays first in the inbox
    JobTimeoutLimit limit = JobTimeout(runtime_->config.jobs.timeout_s, parsed.message.timeout_s);
    options.timeout = limit.seconds;
    options.timeout_source = limit.source;
    JobRun run;
    if (!parsed.ok()) {
      // Valid when accepted; the limits changed since (a restart with
      // another config): the job fails with the reason, as a bad message.
      auto failed = worker_store_->Fail(job, parsed.error_code, parsed.error);
      run.outcome = failed.ok() ? JobOutcome::kDone : JobOutcome::kRetryLater;
      run.error = failed.status();
    } else {
      pipelines::Processor* processor = runtime_->registry->Find(parsed.message.pipeline);
      std::lock_guard<std::mutex> turn(runtime_->job_mutex);
      run = RunJob(*worker_store_, *processor, job, ToPipelineRequest(parsed.message), cancel_,
                   options);
    }
    if (run.outcome == JobOutcome::kDone) {
      if (Status s = worker_store_->RemoveFromInbox(next.first); !s.ok() && log_) {
        log_(LogLevel::kWarn, "job=" + next.first + " inbox: " + s.ToString());
      }
    } else if (cancel_.load()) {
      return;  // shutting down: it stays in the inbox
    } else {
      // A store error: try again after a pause, the job still first.
      if (log_) log_(LogLevel::kError, "job=" + next.first + " " + run.error.ToString());
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    queue_.pop_front();
  }
}

}  // namespace ellm::app
