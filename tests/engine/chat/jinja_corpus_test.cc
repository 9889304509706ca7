// Replays the chat-template fuzz corpus (tests/engine/chat/jinja_corpus/:
// seed-* templates, the hostile ones of issue 53 and real ones, plus inputs
// `scripts/fuzz jinja` found) through the fuzz target's own entry point
// with the ordinary build, so CI's ASan+UBSan run covers every path the
// fuzzer reached without needing clang. Each input keeps every promise and
// ends in well under a second.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cpu_time.h"
#include "jinja_fuzz_input.h"
#include "test_env.h"

namespace ellm::jinja {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> CorpusFiles() {
  fs::path dir = fs::path(::ellm::testing::SourceDir()) / "tests/engine/chat/jinja_corpus";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(JinjaCorpus, EveryInputKeepsThePromisesQuickly) {
  const std::vector<fs::path> files = CorpusFiles();
  ASSERT_GE(files.size(), 10u) << "the corpus is tests/engine/chat/jinja_corpus";
  int seeds = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << path;
    const std::string source((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    const double start = ellm::testing::ThreadCpuSeconds();
    EXPECT_EQ(CheckJinjaFuzzInput(source), "");
    // A hang guard (cpu_time.h): each input takes well under 0.3 s.
    EXPECT_LT(ellm::testing::ThreadCpuSeconds() - start, 3.0 * ellm::testing::kSanitizerSlowdown);
    if (path.filename().string().rfind("seed-", 0) == 0) ++seeds;
  }
  EXPECT_GE(seeds, 10);
}

}  // namespace
}  // namespace ellm::jinja
