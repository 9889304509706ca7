// `ellm summarize --log-prompts FILE` (issue 39): one JSON line per
// generation the run made, holding what another engine needs to repeat it
// (bench/docs_per_hour.py replays it through llama.cpp): the rendered
// prompt and its token ids, each section's lead and limit, the stops, and
// ellm's answer; the lines add up to the run's own token counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

// A plain pipeline with two led sections (map-reduce for documents over
// the context); small limits keep it fast.
constexpr const char* kPipeline = R"(name: tiny-log
version: "1"
format: plain
documents: {min: 1, max: 1}
prompt: |
  {{document}}

  Notes on the text above.
sections:
  - {heading: Colours, lead: "The colours", max_tokens: 3}
  - {heading: Rooms, lead: "-", max_tokens: 3}
generation: {max_tokens: 8, temperature: 0, stop: ["\n\n"]}
map_prompt: |
  {{chunk}}

  Notes on part {{part}} of {{parts}}:
  -
map_max_tokens: 3
overflow: map-reduce
)";

struct LoggedRun {
  nlohmann::json result;                // --json's object
  std::vector<nlohmann::json> records;  // the prompt log's lines
};

LoggedRun Summarize(const std::string& model, const std::string& dir, const std::string& doc,
                    const std::string& flags) {
  LoggedRun run;
  std::string out;
  const std::string log = dir + "/prompts.jsonl";
  const int rc = RunCli("summarize '" + doc + "' --pipeline tiny-log --pipelines '" + dir +
                            "/pipelines' --model '" + model + "' --db '" + dir +
                            "/ellm.db' --threads 2 --json --log-prompts '" + log + "' " + flags,
                        &out);
  EXPECT_EQ(rc, 0) << out;
  // stdout is the JSON object; stderr's one summary line follows it.
  const size_t end = out.rfind("\n}\n");
  if (rc != 0 || end == std::string::npos) {
    ADD_FAILURE() << out;
    return run;
  }
  run.result = nlohmann::json::parse(out.substr(0, end + 2), nullptr, false);
  EXPECT_FALSE(run.result.is_discarded()) << out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    run.records.push_back(nlohmann::json::parse(line, nullptr, false));
    EXPECT_FALSE(run.records.back().is_discarded()) << line;
  }
  return run;
}

void ExpectRecordsAddUp(const LoggedRun& run) {
  int64_t prompt = 0, generated = 0;
  for (const nlohmann::json& r : run.records) {
    ASSERT_TRUE(r.contains("ids") && r["ids"].is_array()) << r.dump();
    EXPECT_EQ(r["ids"].size(), r["result"]["prompt_tokens"].get<size_t>());
    EXPECT_FALSE(r["chat"].get<bool>());
    EXPECT_EQ(r["settings"]["temperature"].get<double>(), 0.0);
    EXPECT_GT(r["seconds"].get<double>(), 0.0);
    ASSERT_EQ(r["sections"].size(), r["result"]["sections"].size()) << r.dump();
    for (const nlohmann::json& s : r["sections"]) {
      // A lead's ids are fed after the prompt; no lead, no ids.
      EXPECT_EQ(s["lead"].get<std::string>().empty(), s["lead_ids"].empty()) << s.dump();
    }
    prompt += r["result"]["prompt_tokens"].get<int64_t>();
    generated += r["result"]["generated_tokens"].get<int64_t>();
  }
  EXPECT_EQ(prompt, run.result["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(generated, run.result["generated_tokens"].get<int64_t>());
}

// A log that cannot be written ends the run with an error naming it,
// before any generation, and stores nothing.
TEST(SummarizeCli, LogPromptsToAnUnwritablePathFailsNamingIt) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-summarize-log");
  fs::create_directories(dir + "/pipelines");
  std::ofstream(dir + "/pipelines/tiny-log.yaml") << kPipeline;
  std::ofstream(dir + "/note.txt") << "The kitchen door is red.\n";
  std::string out;
  const std::string log = dir + "/no-such-dir/prompts.jsonl";
  const int rc = RunCli("summarize '" + dir + "/note.txt' --pipeline tiny-log --pipelines '" + dir +
                            "/pipelines' --model '" + model + "' --db '" + dir +
                            "/ellm.db' --threads 2 --log-prompts '" + log + "'",
                        &out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("--log-prompts '" + log + "'"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(log));
}

TEST(SummarizeCli, LogPromptsRecordsTheSinglePass) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-summarize-log");
  fs::create_directories(dir + "/pipelines");
  std::ofstream(dir + "/pipelines/tiny-log.yaml") << kPipeline;
  std::ofstream(dir + "/note.txt") << "The kitchen door is red and the hall wall is white.\n";
  const LoggedRun run = Summarize(model, dir, dir + "/note.txt", "");
  EXPECT_EQ(run.result["strategy"], "single-pass");
  ASSERT_EQ(run.records.size(), 1u);
  const nlohmann::json& r = run.records[0];
  EXPECT_NE(r["text"].get<std::string>().find("The kitchen door is red"), std::string::npos);
  ASSERT_EQ(r["sections"].size(), 2u);
  EXPECT_EQ(r["sections"][0]["lead"], "## Colours\nThe colours");  // heading + lead
  EXPECT_EQ(r["sections"][1]["max_tokens"], 3);
  EXPECT_EQ(r["settings"]["stop"], nlohmann::json::array({"\n\n"}));
  ExpectRecordsAddUp(run);
  fs::remove_all(dir);
}

TEST(SummarizeCli, LogPromptsRecordsEveryMapStepAndTheReduce) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-summarize-log");
  fs::create_directories(dir + "/pipelines");
  std::ofstream(dir + "/pipelines/tiny-log.yaml") << kPipeline;
  {
    std::ofstream doc(dir + "/long.txt");
    for (int i = 1; i <= 60; ++i) {
      doc << "Room " << i << " has a door painted colour number " << i * 7
          << " and a window facing the garden.\n";
    }
  }
  const LoggedRun run = Summarize(model, dir, dir + "/long.txt", "--ctx 512");
  EXPECT_NE(run.result["strategy"].get<std::string>().find("map-reduce"), std::string::npos)
      << run.result.dump();
  // A pipeline with sections maps each chunk through the sections (section-
  // wise), then reduces the parts' answers: two map steps at least, then
  // the reduce, whose prompt holds the map steps' answers.
  ASSERT_GE(run.records.size(), 3u);
  EXPECT_NE(run.records.front()["text"].get<std::string>().find("Room 1 has a door"),
            std::string::npos);
  const std::string reduce = run.records.back()["text"];
  EXPECT_NE(reduce.find("Part 2:"), std::string::npos) << reduce;
  EXPECT_EQ(reduce.find("Room 1 has a door"), std::string::npos) << reduce;
  ExpectRecordsAddUp(run);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
