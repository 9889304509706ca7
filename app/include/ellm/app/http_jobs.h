// Document jobs that come over HTTP (POST /v1/jobs): checked by the same
// ParseJobMessage as Kafka messages (schema, limits, allowed roots, error
// codes), queued in the store's inbox with their whole message (so a
// restart runs them again: nothing accepted is lost), and run one at a time
// on a worker thread by RunJob, on the runtime's pipelines, without a
// publisher. Jobs from every door take the runtime's job mutex, so an HTTP
// job and a Kafka job never run the pipelines at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "ellm/app/run_job.h"
#include "ellm/app/runtime.h"
#include "ellm/ingest/job_message.h"
#include "ellm/server/job_service.h"
#include "ellm/store/job_store.h"

namespace ellm::app {

class HttpJobQueue : public server::JobService {
 public:
  // Opens two connections to the runtime's store (one for requests, one
  // for the worker) and queues what the inbox still holds. `log` as in
  // RunJobOptions (may be empty).
  static StatusOr<std::unique_ptr<HttpJobQueue>> Start(
      Runtime* runtime, std::string worker,
      std::function<void(LogLevel, const std::string&)> log = nullptr);
  // Cancels the running job (it stays in the inbox and runs again at the
  // next start) and joins the worker.
  ~HttpJobQueue() override;

  server::JobAnswer Submit(nlohmann::json message, std::vector<Upload> uploads) override;
  server::JobAnswer Get(const std::string& id) override;
  server::JobAnswer List(const std::string& status, int limit) override;

  // Jobs queued or running here (tests, metrics).
  size_t pending() const;

 private:
  HttpJobQueue() = default;
  void Work();

  Runtime* runtime_ = nullptr;
  std::string worker_name_;
  std::function<void(LogLevel, const std::string&)> log_;
  ingest::JobMessageLimits limits_;
  std::mutex api_mu_;
  std::unique_ptr<store::JobStore> api_store_;     // requests, under api_mu_
  std::unique_ptr<store::JobStore> worker_store_;  // the worker thread only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, std::string>> queue_;  // (id, message)
  bool stop_ = false;
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

}  // namespace ellm::app
