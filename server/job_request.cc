#include "ellm/server/job_request.h"

#include <utility>

#include "ellm/base/json.h"

namespace ellm::server {

using nlohmann::json;

JobRequestOrError JobRequestFromForm(const std::vector<FormPart>& parts) {
  JobRequest request;
  request.message = json::object();
  for (const FormPart& part : parts) {
    if (!part.filename.empty()) {
      request.uploads.push_back({part.filename, part.content});
    } else if (part.field == "pipeline" || part.field == "id") {
      request.message[part.field] = part.content;
    } else if (part.field == "params") {
      StatusOr<json> params = ParseJson(part.content);
      if (!params.ok()) return JsonError(params.status(), "params", "params");
      request.message["params"] = std::move(*params);
    } else {
      return InvalidRequest(
          "unknown form field '" + part.field + "' (pipeline, params, id, and files)", part.field);
    }
  }
  request.message["documents"] = json::array();
  return request;
}

JobRequestOrError JobRequestFromBody(std::string_view body) {
  StatusOr<json> parsed = ParseJson(body);
  if (!parsed.ok()) return JsonError(parsed.status(), "the request body");
  if (!parsed->is_object()) {
    return InvalidRequest("the request body is not a JSON object", "", "invalid_json");
  }
  JobRequest request;
  request.message = std::move(*parsed);
  return request;
}

JobRequestOrError FinishJobRequest(JobRequest request, std::string_view idempotency_key,
                                   std::string_view fresh_id) {
  json& message = request.message;
  if (message.contains("reply_to")) {
    return InvalidRequest(
        "reply_to is for jobs sent through Kafka: an HTTP job's result is read with "
        "GET /v1/jobs/{id}",
        "reply_to", "reply_to_not_allowed");
  }
  if (!message.contains("version")) message["version"] = 1;
  if (!idempotency_key.empty()) {
    if (message.contains("id") && message["id"] != idempotency_key) {
      return InvalidRequest("the body's id differs from Idempotency-Key", "id", "key_mismatch");
    }
    message["id"] = std::string(idempotency_key);
  } else if (!message.contains("id")) {
    message["id"] = std::string(fresh_id);
  }
  return request;
}

}  // namespace ellm::server
