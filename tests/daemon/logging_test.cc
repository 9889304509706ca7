#include "logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace ellm::daemon {
namespace {

TEST(Logging, JsonEscapeHandlesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(JsonEscape("x\ny\tz\x01"), "x\\ny\\tz\\u0001");
}

TEST(Logging, JsonLinesParseAndCarryTheJobId) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  ConfigureLogging({.level = "info", .format = "json"});
  spdlog::info("job=q3-report failed: \"quoted\" and\nnewline");
  spdlog::warn("no job here");
  spdlog::debug("below the level");
  spdlog::set_default_logger(previous);

  std::istringstream lines(out.str());
  std::string line;
  std::vector<nlohmann::json> parsed;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    parsed.push_back(j);
  }
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["level"], "info");
  EXPECT_EQ(parsed[0]["job"], "q3-report");
  EXPECT_EQ(parsed[0]["msg"], "job=q3-report failed: \"quoted\" and\nnewline");
  EXPECT_EQ(parsed[1]["level"], "warning");
  EXPECT_FALSE(parsed[1].contains("job"));
  EXPECT_TRUE(parsed[1]["time"].get<std::string>().ends_with("Z"));
}

}  // namespace
}  // namespace ellm::daemon
