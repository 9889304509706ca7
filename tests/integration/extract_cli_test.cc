// `ellm extract` reads the limits of the configuration's extract: section
// (issue 37), as ellmd and `ellm summarize` do, and its flags override them:
// a file ellmd refuses is refused here too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

// `ellm extract` on a five-page PDF (tests/data/pdf/make_pdfs.py) with the
// extractor this build made and `config` as the configuration file, then
// `flags`; returns the exit status, output in `out`.
int ExtractFivePages(const std::string& config, const std::string& flags, std::string* out) {
  const std::string pdf = SourceDir() + "/tests/data/pdf/headers_footers.pdf";
  return RunCli("extract '" + pdf + "' --extractor '" ELLM_EXTRACTOR_PATH "' --config '" + config +
                    "' " + flags,
                out);
}

TEST(ExtractCli, ConfigMaxPagesRejectsALongerPdf) {
  const std::string dir = MakeTempDir("ellm-extract-cli");
  std::ofstream(dir + "/ellm.yaml") << "extract:\n  max_pages: 1\n";
  std::string out;
  EXPECT_EQ(ExtractFivePages(dir + "/ellm.yaml", "", &out), 1) << out;
  EXPECT_NE(out.find("ellm extract: too_many_pages: "), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

TEST(ExtractCli, FlagsOverrideTheConfig) {
  const std::string dir = MakeTempDir("ellm-extract-cli");
  std::ofstream(dir + "/ellm.yaml") << "extract:\n  max_pages: 1\n";
  std::string out;
  EXPECT_EQ(ExtractFivePages(dir + "/ellm.yaml", "--max-pages 5", &out), 0) << out;
  EXPECT_NE(out.find("[page 5]"), std::string::npos) << out;
  // A flag stricter than the config wins too.
  std::ofstream(dir + "/ellm.yaml") << "extract:\n  max_pages: 100\n";
  out.clear();
  EXPECT_EQ(ExtractFivePages(dir + "/ellm.yaml", "--max-pages 4", &out), 1) << out;
  EXPECT_NE(out.find("too_many_pages"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// A file ellmd would refuse to start with is a usage error naming the file
// and the key, not silently ignored.
TEST(ExtractCli, InvalidConfigIsAUsageError) {
  const std::string dir = MakeTempDir("ellm-extract-cli");
  std::ofstream(dir + "/ellm.yaml") << "extract:\n  max_pages: 1\n  max_pagez: 2\n";
  std::string out;
  EXPECT_EQ(ExtractFivePages(dir + "/ellm.yaml", "", &out), 2) << out;
  EXPECT_NE(out.find("ellm.yaml"), std::string::npos) << out;
  EXPECT_NE(out.find("max_pagez"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// A Word file is read by its content, whatever its name: --outline prints
// its heading tree with the numbers Word shows, --json carries the same.
TEST(ExtractCli, AWordFileUnderAnyNameGivesItsOutline) {
  const std::string dir = MakeTempDir("ellm-extract-cli");
  std::filesystem::copy_file(SourceDir() + "/tests/data/office/tracked.docx",
                             dir + "/contract-from-email");
  std::string out;
  ASSERT_EQ(RunCli("extract '" + dir + "/contract-from-email' --outline --extractor '" +
                       ELLM_EXTRACTOR_PATH + "'",
                   &out),
            0)
      << out;
  EXPECT_EQ(out, "1 Services (p. 1)\n2 Fees (p. 1)\n3 Term (p. 2)\n");
  out.clear();
  ASSERT_EQ(RunCli("extract '" + dir + "/contract-from-email' --json --extractor '" +
                       ELLM_EXTRACTOR_PATH + "'",
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("\"media_type\": \"application/vnd.openxmlformats-officedocument."
                     "wordprocessingml.document\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"headings\""), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
