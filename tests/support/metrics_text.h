// Reading a Prometheus text exposition in tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ellm::testing {

// The ellm_http_requests_total lines of `text`.
inline std::vector<std::string> RequestSeries(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ellm_http_requests_total{", 0) == 0) out.push_back(line);
  }
  return out;
}

}  // namespace ellm::testing
