// The PDF's own outline as the document's heading tree, through the real
// ellm-extract child, on real manuals from Debian packages: against the
// outline pypdf reads from the same files (tests/data/pdf/outlines/, made
// by make_reference.py there), entry by entry: level, page and title.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ellm/ingest/extract.h"
#include "pdf_test_util.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

using testing::TestOptions;

// Without full stops: pypdf keeps a heading's number in its title ("1.1.
// Version"), ellm splits it off ("1.1" and "Version").
std::string NoStops(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
  return s;
}

std::vector<std::string> Reference(const std::string& name) {
  std::ifstream in(::ellm::testing::SourceDir() + "/tests/data/pdf/outlines/" + name + ".tsv");
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(in, line)) rows.push_back(NoStops(line));
  return rows;
}

using OutlineCase = std::pair<const char*, const char*>;  // reference name, PDF path

class RealPdfOutline : public ::testing::TestWithParam<OutlineCase> {};

std::string CaseName(const ::testing::TestParamInfo<OutlineCase>& info) {
  std::string name = info.param.first;
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

TEST_P(RealPdfOutline, EveryBookmarkWithItsLevelAndPage) {
  const auto [name, path] = GetParam();
  ELLM_REQUIRE_OR_SKIP_(std::filesystem::exists(path),
                        std::string(path) + " (scripts/bootstrap installs its package)");
  const std::vector<std::string> want = Reference(name);
  ASSERT_GE(want.size(), 20u) << name;
  auto doc = ExtractDocument(path, TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  std::vector<std::string> got;
  for (const Heading& h : doc->headings) {
    got.push_back(NoStops(std::to_string(h.level) + "\t" + std::to_string(h.page) + "\t" +
                          (h.number.empty() ? "" : h.number + " ") + h.title));
  }
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(
    Debian, RealPdfOutline,
    ::testing::Values(std::make_pair("libtasn1", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
                      std::make_pair("shared-mime-info-spec",
                                     "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")),
    CaseName);

}  // namespace
}  // namespace ellm::ingest
