// A POST /v1/jobs request as the job message the job service checks: a
// JSON object, or a multipart form (fields pipeline, params (JSON text)
// and id; every file part one more document). Pure functions: no sockets,
// no store (the fuzz target `multipart` drives them behind a real
// cpp-httplib server, tests/fuzz/multipart_harness.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ellm/server/job_service.h"
#include "ellm/server/openai.h"

namespace ellm::server {

// One part of a multipart form, as the HTTP library parsed it.
struct FormPart {
  std::string field;
  std::string filename;  // empty: a plain field
  std::string content;
};

struct JobRequest {
  nlohmann::json message;  // a version-1 job message (not yet validated)
  std::vector<JobService::Upload> uploads;
};

using JobRequestOrError = std::variant<JobRequest, ApiError>;

// A multipart form: pipeline and id as text, params as JSON (depth and size
// bounded as every body), file parts as uploads; any other field is a 400.
JobRequestOrError JobRequestFromForm(const std::vector<FormPart>& parts);

// A JSON body: an object, bounded as every body.
JobRequestOrError JobRequestFromBody(std::string_view body);

// What both forms then get: reply_to refused (an HTTP job's result is read
// with GET), version 1 when absent, the id from `idempotency_key` (which
// must agree with the body's), else the body's, else `fresh_id`.
JobRequestOrError FinishJobRequest(JobRequest request, std::string_view idempotency_key,
                                   std::string_view fresh_id);

}  // namespace ellm::server
