// Replays the OpenAI request fuzz corpus (tests/server/openai_request_corpus/:
// seeds from tests/fuzz/make_json_seeds.py plus inputs scripts/fuzz found)
// as tests/fuzz/openai_request_fuzz.cc does, with the ordinary build, so
// CI's ASan+UBSan run covers what the fuzzer reached without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ellm/server/openai.h"
#include "ellm/server/tool_calls.h"
#include "test_env.h"

namespace ellm::server {
namespace {

namespace fs = std::filesystem;

TEST(OpenAiRequestCorpus, EveryInputIsARequestOrAnErrorAndDeepSeedsNameTheLimit) {
  const fs::path dir =
      fs::path(::ellm::testing::SourceDir()) / "tests/server/openai_request_corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 8u) << "seeds missing in " << dir << " (make_json_seeds.py)";
  int ok = 0;
  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    SCOPED_TRACE(name);
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (bool chat : {true, false}) {
      const ParsedRequest p = ParseCompletionRequest(text, chat);
      if (name.rfind("seed-deep-", 0) == 0) {
        ASSERT_TRUE(p.error.has_value());
        EXPECT_EQ(p.error->code, "json_too_deep");
        EXPECT_NE(p.error->message.find("JSON nested deeper than 64 levels at byte "),
                  std::string::npos)
            << p.error->message;
      }
      if (p.error) {
        EXPECT_FALSE(p.error->message.empty());
        continue;
      }
      ++ok;
      if (chat) {
        EXPECT_FALSE(ToolMessages(p.request.messages, p.request.tools, false).empty());
      }
    }
  }
  EXPECT_GE(ok, 3) << "the valid seeds should parse";
}

}  // namespace
}  // namespace ellm::server
