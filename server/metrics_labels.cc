#include "ellm/server/metrics_labels.h"

#include <array>

namespace ellm::server {

std::string_view RouteLabel(std::string_view path) {
  // The fixed routes of ApiServer::Bind; keep the two in step.
  static constexpr std::array<std::string_view, 6> kFixed = {
      "/health", "/metrics", "/v1/models", "/v1/jobs", "/v1/chat/completions", "/v1/completions"};
  for (std::string_view route : kFixed) {
    if (path == route) return route;
  }
  constexpr std::string_view kJob = "/v1/jobs/";
  if (path.size() > kJob.size() && path.substr(0, kJob.size()) == kJob &&
      path.find('/', kJob.size()) == std::string_view::npos) {
    return "/v1/jobs/{id}";
  }
  return "unmatched";
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ellm::server
