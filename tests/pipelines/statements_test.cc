// Statements traced to pages (statements.h).
#include "ellm/pipelines/statements.h"

#include <gtest/gtest.h>

namespace ellm::pipelines {
namespace {

const char kManual[] =
    "[page 1]\nHow SQLite Is Tested\n\nThe reliability and robustness of SQLite is achieved "
    "in part by thorough and careful testing. Three independent test harnesses are used: the "
    "TCL tests, the TH3 test harness and the SQL Logic Test.\n"
    "[page 2]\nAnomaly testing\n\nOut-of-memory errors are simulated by a malloc wrapper "
    "that fails after a chosen number of allocations. I/O errors are simulated by a virtual "
    "file system that fails on command.\n"
    "[page 3]\nFuzz testing\n\nFuzz testing feeds random SQL statements and corrupt database "
    "files to the library, looking for crashes.\n";

TEST(Statements, StemsIgnoreFunctionWordsAndSuffixes) {
  EXPECT_EQ(ContentStems("The report describes how tests are tested while testing"),
            std::vector<std::string>({"test"}));
  EXPECT_EQ(ContentStems("Simulated allocations, 2026 and 12"),
            std::vector<std::string>({"simula", "alloc"}));
}

TEST(Statements, ASentenceIsTracedToThePageHoldingItsWords) {
  const auto pages = SplitPages(kManual);
  auto s =
      SupportingPage("Out-of-memory errors are simulated with a failing malloc wrapper.", pages);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->first_page, 2);
  EXPECT_EQ(s->last_page, 2);
  // Words the document never uses: no page.
  EXPECT_FALSE(SupportingPage("The company expects revenue growth in Asian markets.", pages));
  // Too short to judge.
  EXPECT_FALSE(SupportingPage("SQLite testing.", pages));
}

TEST(Statements, UnsupportedSentencesAreRemovedAndListed) {
  const auto pages = SplitPages(kManual);
  const std::string body =
      "The report describes three independent test harnesses: TCL, TH3 and SQL Logic Test [page "
      "7]. The company expects revenue growth in Asian markets.\n"
      "- Fuzz testing feeds corrupt database files and random statements.\n"
      "- Short line.\n- Fuzz testing.\n- The report is about it.\n";
  StatementCheck c = VerifyStatements(body, pages);
  EXPECT_EQ(c.statements, 6);
  EXPECT_EQ(c.supported, 3);
  ASSERT_EQ(c.unsupported.size(), 3u);
  EXPECT_EQ(c.unsupported[0], "The company expects revenue growth in Asian markets.");
  EXPECT_EQ(c.unsupported[1], "Short line.");              // neither word in the manual
  EXPECT_EQ(c.unsupported[2], "The report is about it.");  // no content word at all
  // The model's own page marker goes; ours replaces it.
  EXPECT_EQ(c.text,
            "The report describes three independent test harnesses: TCL, TH3 and SQL Logic "
            "Test. [p. 1]\n"
            "- Fuzz testing feeds corrupt database files and random statements. [p. 3]\n"
            "- Fuzz testing. [p. 3]");
}

TEST(Statements, ASentenceSaidBeforeIsDropped) {
  const auto pages = SplitPages(kManual);
  std::vector<std::vector<std::string>> said;
  StatementCheck first = VerifyStatements(
      "Fuzz testing feeds random SQL statements and corrupt database files.", pages, false, &said);
  EXPECT_EQ(first.supported, 1);
  ASSERT_EQ(said.size(), 1u);
  // The same claim reworded in a later section; a new one stays.
  StatementCheck later = VerifyStatements(
      "- Fuzz testing feeds corrupt database files and random statements to SQLite.\n"
      "- Out-of-memory errors are simulated by a malloc wrapper.",
      pages, false, &said);
  EXPECT_EQ(later.repeated, 1);
  EXPECT_EQ(later.text, "- Out-of-memory errors are simulated by a malloc wrapper. [p. 2]");
  EXPECT_EQ(said.size(), 2u);
}

TEST(Statements, ACheckedFigureLineKeepsItsCitation) {
  const auto pages = SplitPages(kManual);
  const std::string body = "- Three harnesses are used for testing robustness [p. 1]\n";
  EXPECT_EQ(VerifyStatements(body, pages, /*keep_cited=*/true).text,
            "- Three harnesses are used for testing robustness [p. 1]");
  // Without keep_cited the marker is the model's: checked again.
  EXPECT_EQ(VerifyStatements(body, pages).text,
            "- Three harnesses are used for testing robustness [p. 1]");
}

TEST(Statements, TheOutlineIsTheDocumentsNumberedTopLevelSections) {
  const auto pages = SplitPages(
      "[page 1]\nHow SQLite Is Tested\n\n1. Introduction\n\nThe reliability of SQLite.\n\n"
      "1.1. Executive Summary\n\nFour harnesses.\n\n2. Test Harnesses\n\nThere are four.\n"
      "[page 2]\nMore on harnesses, with 3 tables.\n\n5. Not next in sequence\n\n"
      "3 Anomaly Testing\n\nOut-of-memory errors.\n[page 3]\n4. Fuzz testing ends here.\n\n"
      "4. Fuzz Testing\n\nRandom SQL.\n");
  const std::vector<OutlineEntry> o = DocumentOutline(pages);
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o[0].heading, "1. Introduction");
  EXPECT_EQ(o[1].heading, "2. Test Harnesses");
  EXPECT_EQ(o[1].first_page, 1);
  EXPECT_EQ(o[1].last_page, 2);
  EXPECT_EQ(o[2].heading, "3 Anomaly Testing");
  EXPECT_EQ(o[3].heading, "4. Fuzz Testing");  // not the sentence ending in '.'
  EXPECT_EQ(o[3].first_page, 3);
  EXPECT_NE(o[0].text.find("1.1. Executive Summary"), std::string::npos);
  EXPECT_EQ(o[1].text.rfind("2. Test Harnesses", 0), std::string::npos);  // marker first
  EXPECT_NE(o[1].text.find("[page 2]\nMore on harnesses"), std::string::npos);
  // A lone "1. ..." is no outline.
  EXPECT_TRUE(DocumentOutline(SplitPages("[page 1]\n1. Open the file\n\nText.\n")).empty());
}

TEST(Statements, AnySentenceOverAnyPagesIsSafe) {
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 200; ++i) {
    std::string t;
    const int n = static_cast<int>(x % 120);
    for (int k = 0; k < n; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      static const char kAlphabet[] = "abc tes. \n[]page1-\xE2\x80\x93\xC3";
      t += kAlphabet[x % (sizeof(kAlphabet) - 1)];
    }
    const auto pages = SplitPages(t);
    StatementCheck c = VerifyStatements(t, pages);
    for (const OutlineEntry& e : DocumentOutline(pages)) EXPECT_LE(e.first_page, e.last_page);
    EXPECT_LE(c.supported, c.statements);
    EXPECT_EQ(c.unsupported.size(), static_cast<size_t>(c.statements - c.supported));
  }
}

}  // namespace
}  // namespace ellm::pipelines
