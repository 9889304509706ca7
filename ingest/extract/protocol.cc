// The parent/child wire contract (see protocol.h).
#include "extract/protocol.h"

#include <nlohmann/json.hpp>

#include "ellm/base/json.h"
#include "ellm/ingest/extract.h"

namespace ellm::ingest {

std::string EncodeExtractorError(const Status& status) {
  std::optional<ExtractError> error = ExtractErrorOf(status);
  nlohmann::json j = {{"error", ExtractErrorName(error.value_or(ExtractError::kCrashed))},
                      {"message", status.message()}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status DecodeExtractorError(std::string_view json) {
  // The child reads hostile documents: what it sends is bounded like them.
  StatusOr<nlohmann::json> parsed = ParseJson(json);
  const nlohmann::json j = parsed.ok() ? std::move(*parsed) : nlohmann::json();
  if (j.is_object() && j.contains("error") && j["error"].is_string() && j.contains("message") &&
      j["message"].is_string()) {
    Status reason_only =
        Status(StatusCode::kInternal, "x").WithReason("extract." + j["error"].get<std::string>());
    if (std::optional<ExtractError> e = ExtractErrorOf(reason_only)) {
      return MakeExtractError(*e, j["message"].get<std::string>());
    }
  }
  return MakeExtractError(ExtractError::kCrashed,
                          "the extractor reported an error in a form it should not use");
}

}  // namespace ellm::ingest
