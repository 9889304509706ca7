// Document jobs over HTTP (POST /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs):
// what the API needs of a job queue. The queue behind it (app/http_jobs.h)
// runs them through the same validation, store and pipelines as Kafka
// messages.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ellm::server {

// An HTTP status and its JSON body (a job, a list, or an OpenAI-style error).
struct JobAnswer {
  int status = 200;
  nlohmann::json body;
};

class JobService {
 public:
  virtual ~JobService() = default;
  // A file uploaded with the request: one more inline document.
  struct Upload {
    std::string name;
    std::string bytes;
  };
  // `message` is a version-1 job message, exactly as on the jobs topic;
  // `uploads` are appended to its documents. 202 with {"id", "object":
  // "job", "status": "queued"} when queued; 200 with the job when that id
  // exists already (a retried request); 400 naming the message's error code.
  virtual JobAnswer Submit(nlohmann::json message, std::vector<Upload> uploads) = 0;
  // 200 with the job (as `ellm jobs show --json`), or 404.
  virtual JobAnswer Get(const std::string& id) = 0;
  // 200 with {"object": "list", "data": [jobs without events]}, newest first.
  virtual JobAnswer List(const std::string& status, int limit) = 0;
};

}  // namespace ellm::server
