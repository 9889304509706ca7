// Replays the job message fuzz corpus (tests/ingest/job_message_corpus/:
// seeds from tests/fuzz/make_json_seeds.py plus inputs scripts/fuzz found)
// through ParseJobMessage with the ordinary build, so CI's ASan+UBSan run
// covers what the fuzzer reached without needing clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ellm/ingest/job_message.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

namespace fs = std::filesystem;

TEST(JobMessageCorpus, EveryInputIsAJobOrAnErrorAndDeepSeedsNameTheLimit) {
  const fs::path dir = fs::path(::ellm::testing::SourceDir()) / "tests/ingest/job_message_corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u) << "seeds missing in " << dir << " (make_json_seeds.py)";
  // As tests/fuzz/job_message_fuzz.cc sets them.
  JobMessageLimits limits;
  limits.pipelines = {"summarize-report", "document-stats"};
  limits.allowed_roots = {"/nonexistent-ellm-fuzz-root"};
  int ok = 0;
  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    SCOPED_TRACE(name);
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const ParsedJob p = ParseJobMessage(text, "", limits);
    EXPECT_EQ(p.ok(), p.error.empty()) << p.error_code;
    ok += p.ok();
    if (name.rfind("seed-deep-", 0) == 0) {
      EXPECT_EQ(p.error_code, "invalid_message");
      EXPECT_NE(p.error.find("JSON nested deeper than 64 levels at byte "), std::string::npos)
          << p.error;
    }
  }
  EXPECT_GE(ok, 2) << "the valid seeds (inline documents) should parse";
}

}  // namespace
}  // namespace ellm::ingest
