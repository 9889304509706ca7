// Issue 55's real-manual case: R's "R Data Import/Export" (41 pages, from
// Debian's r-doc-pdf) summarised with the shipped summarize-report pipeline
// and the real model. Its Contents must list the manual's own chapters
// with their pages, as its bookmarks name them, not a numbered list inside
// chapter 2. Minutes on 2 cores: nightly.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

TEST(RealManual, ContentsAreTheChaptersItsOutlineNames) {
  ELLM_REQUIRE_MODEL(model);
  const std::string pdf = "/usr/share/R/doc/manual/R-data.pdf";
  ELLM_REQUIRE_OR_SKIP_(fs::exists(pdf), pdf + " (scripts/bootstrap installs r-doc-pdf)");
  const std::string dir = MakeTempDir("ellm-real-manual");
  std::string out;
  const int rc = RunCli("summarize '" + pdf + "' --model '" + model + "' --db '" + dir +
                            "/ellm.db' --threads 2 --json",
                        &out);
  ASSERT_EQ(rc, 0) << out;
  const size_t end = out.rfind("\n}\n");
  ASSERT_NE(end, std::string::npos) << out;
  const nlohmann::json result = nlohmann::json::parse(out.substr(0, end + 2), nullptr, false);
  ASSERT_TRUE(result.is_object()) << out;
  const nlohmann::json& outline = result["json"]["outline"];
  ASSERT_TRUE(outline.is_array()) << result.dump(2);
  std::vector<std::string> got;
  for (const auto& e : outline) {
    got.push_back(e["heading"].get<std::string>() + " p" +
                  std::to_string(e["pages"][0].get<int>()));
  }
  // The bookmarks of R-data.pdf (R 4.2.2) at their top level.
  const std::vector<std::string> want = {"Acknowledgements p5",
                                         "1 Introduction p7",
                                         "2 Spreadsheet-like data p12",
                                         "3 Importing from other statistical systems p19",
                                         "4 Relational databases p21",
                                         "5 Binary files p28",
                                         "6 Image files p29",
                                         "7 Connections p30",
                                         "8 Network interfaces p35",
                                         "9 Reading Excel spreadsheets p36",
                                         "A References p37",
                                         "Function and variable index p38",
                                         "Concept index p40"};
  EXPECT_EQ(got, want);
  const std::string text = result["text"].get<std::string>();
  EXPECT_NE(text.find("- 2 Spreadsheet-like data (pp. 12-"), std::string::npos) << text;
  EXPECT_EQ(text.find("Header line"), std::string::npos) << text;  // not a chapter
  // Issue 56: its Purpose, Key figures, Risks and Conclusions were all
  // empty (the model's sentences failed their checks). Each now holds the
  // manual's own sentences, quoted, with their pages; the Purpose is the
  // manual saying what it is for, not its licence notice.
  EXPECT_EQ(text.find("(no statement could be traced"), std::string::npos) << text;
  EXPECT_EQ(text.find("(no figure could be verified"), std::string::npos) << text;
  const size_t purpose = text.find("## Purpose\n");
  ASSERT_NE(purpose, std::string::npos) << text;
  const std::string purpose_text = text.substr(purpose, text.find("\n## ", purpose + 1) - purpose);
  EXPECT_NE(purpose_text.find("- \u201cThis manual describes the import and export facilities"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Permission is granted"), std::string::npos) << text;
  EXPECT_GE(result["json"]["extracted"].size(), 4u) << result["json"].dump(1);
  // Issue 56 item 4: a manual's summary, not a report's (no Conclusions).
  EXPECT_EQ(result["json"]["kind"]["name"], "manual") << result["json"]["kind"].dump();
  EXPECT_NE(text.find("## Cautions\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("## Conclusions"), std::string::npos) << text;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
