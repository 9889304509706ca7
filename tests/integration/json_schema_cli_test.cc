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

// A pipeline with generation.json_schema (through `ellm summarize`, the
// same processor the daemon runs): the stored answer is the schema's object.
TEST(JsonSchemaCli, PipelineGeneratesUnderItsSchema) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-json-pipeline");
  std::filesystem::create_directories(dir + "/pipelines");
  std::ofstream(dir + "/pipelines/colour-json.yaml") << R"(name: colour-json
version: "1"
documents: {min: 1, max: 1}
prompt: |
  {{document}}
  The colours named in the note above, as JSON:
generation:
  max_tokens: 64
  json_schema: '{"type": "object", "properties": {"colours": {"type": "array", "items":
    {"type": "string", "maxLength": 12}, "minItems": 1, "maxItems": 3}, "count": {"type":
    "integer", "minimum": 0}}, "required": ["colours", "count"], "additionalProperties": false}'
output: json
schema: {colours: array, count: number}
)";
  std::ofstream(dir + "/note.txt") << "The door is red and the wall is white.\n";
  std::string out;
  ASSERT_EQ(RunCli("summarize '" + dir + "/note.txt' --pipeline colour-json --pipelines '" + dir +
                       "/pipelines' --model '" + model + "' --db '" + dir +
                       "/ellm.db' --threads 2 --json",
                   &out),
            0)
      << out;
  // The JSON document, then the summary line on stderr.
  const auto j = nlohmann::json::parse(out.substr(0, out.rfind("\n}") + 2), nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  const auto& obj = j["json"];
  ASSERT_TRUE(obj.is_object()) << out;
  EXPECT_EQ(obj.size(), 2u) << out;
  ASSERT_TRUE(obj["colours"].is_array()) << out;
  EXPECT_GE(obj["colours"].size(), 1u) << out;
  EXPECT_LE(obj["colours"].size(), 3u) << out;
  EXPECT_TRUE(obj["count"].is_number_integer() && obj["count"].get<int64_t>() >= 0) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
