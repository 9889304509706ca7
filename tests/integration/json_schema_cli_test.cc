// `ellm generate --json-schema FILE` / `--json` on the real model: what comes
// out parses and validates against the schema, whatever the small model
// would have written unconstrained; a schema we cannot enforce is refused
// (exit 2) naming the keyword.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

// The text on stdout, before the stderr lines (constraint:, prefill:).
std::string Output(const std::string& all) {
  const size_t at = all.find("constraint: ");
  return at == std::string::npos ? all : all.substr(0, at);
}

TEST(JsonSchemaCli, GeneratedJsonValidatesAgainstTheSchema) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-json-schema");
  std::ofstream(dir + "/contract.json") << R"({"type": "object", "properties": {
    "party": {"type": "string", "enum": ["supplier", "buyer"]},
    "price": {"type": "number", "minimum": 0},
    "currency": {"type": "string", "minLength": 3, "maxLength": 3},
    "delivery": {"type": "string", "format": "date"}},
    "required": ["party", "price", "currency", "delivery"], "additionalProperties": false})";
  for (const std::string prompt :
       {"Who pays 4,200 EUR by 1 March 2027 in this contract: the buyer pays the supplier.",
        "Tell me a story about a dragon."}) {
    std::string out;
    ASSERT_EQ(RunCli("generate --model '" + model + "' --chat --prompt '" + prompt +
                         "' --json-schema '" + dir + "/contract.json' --max-tokens 96 --threads 2",
                     &out),
              0)
        << out;
    EXPECT_NE(out.find("constraint: "), std::string::npos) << out;
    const auto j = nlohmann::json::parse(Output(out), nullptr, false);
    ASSERT_TRUE(j.is_object()) << out;
    EXPECT_EQ(j.size(), 4u) << out;
    EXPECT_TRUE(j["party"] == "supplier" || j["party"] == "buyer") << out;
    EXPECT_TRUE(j["price"].is_number() && j["price"].get<double>() >= 0) << out;
    EXPECT_EQ(j["currency"].get<std::string>().size(), 3u) << out;
    EXPECT_TRUE(
        std::regex_match(j["delivery"].get<std::string>(), std::regex("\\d{4}-\\d{2}-\\d{2}")))
        << out;
  }
  std::string out;
  ASSERT_EQ(RunCli("generate --model '" + model +
                       "' --chat --prompt 'Return a JSON object with the keys name and country "
                       "for the city of Paris.' --json --max-tokens 160 --threads 2",
                   &out),
            0)
      << out;
  EXPECT_TRUE(nlohmann::json::parse(Output(out), nullptr, false).is_object()) << out;

  std::ofstream(dir + "/pattern.json") << R"({"type": "string", "pattern": "^[A-Z]+$"})";
  out.clear();
  EXPECT_EQ(
      RunCli("generate --model '" + model + "' --prompt x --json-schema '" + dir + "/pattern.json'",
             &out),
      2)
      << out;
  EXPECT_NE(out.find("keyword 'pattern'"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
