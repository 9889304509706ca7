// The multipart door of POST /v1/jobs (server/job_request.h behind a real
// cpp-httplib server): the fuzz target's committed corpus replayed through
// its promises (tests/fuzz/multipart_harness.h), and what the seeds must get.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "multipart_harness.h"

namespace ellm::testing {
namespace {

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MultipartCorpus, EveryInputIsAnsweredAndKeepsItsPromises) {
  MultipartHarness harness;
  const std::filesystem::path dir =
      std::filesystem::path(ELLM_SOURCE_DIR) / "tests/server/multipart_corpus";
  // What the seeds (tests/fuzz/make_multipart_seeds.py) must get.
  const std::map<std::string, int> expected = {
      {"seed-upload.form", 202},      {"seed-params.form", 202},
      {"seed-deep-params.form", 400}, {"seed-unknown-field.form", 400},
      {"seed-bad-id.form", 400},      {"seed-nested-boundary.form", 400}};
  int files = 0;
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    const MultipartResult r = harness.Send(Slurp(entry.path()));
    EXPECT_EQ(r.violation, "");
    EXPECT_NE(r.status, 0);
    if (auto it = expected.find(name); it != expected.end()) {
      EXPECT_EQ(r.status, it->second) << r.reply;
      ++seen;
    }
    ++files;
  }
  EXPECT_EQ(seen, expected.size());
  EXPECT_GE(files, 8);
}

}  // namespace
}  // namespace ellm::testing
