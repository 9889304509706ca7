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
      "- Short line.\n- Fuzz testing.\n- The report is about it.\n"
      // A page marker alone, or a bare full stop, is no statement at all.
      "- [page 3]\n[page 4].\n.\n";
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

// Regression: "the year ended 31 December 2019" about a review of 2025 was
// supported, its words being on the page. Figures, years, dates, amounts and
// percentages must be stated on the cited page, in any spelling.
TEST(Statements, ASentenceWhoseFiguresItsPageDoesNotStateIsUnsupported) {
  const auto pages = SplitPages(
      "[page 1]\n1 Introduction\n\nThis review covers the financial year 2025.\n"
      "[page 2]\n2 Financial results\n\nRevenue rose to EUR 2.3 billion, up 8 percent, in the "
      "year ended 31 December 2025. Operating profit was EUR 1,310 million.\n");
  StatementCheck c = VerifyStatements(
      "The financial results for the year ended 31 December 2019 are summarised.\n"
      "Revenue rose to EUR 2.3bn in the year ended 2025-12-31.\n"
      "Operating profit was EUR 1310 million in 2025.\n"
      "Revenue rose 8% in December 2025.\n"
      "Revenue rose 9 percent.\n",
      pages);
  EXPECT_EQ(c.statements, 5);
  EXPECT_EQ(c.supported, 3);
  ASSERT_EQ(c.unsupported.size(), 2u) << c.text;
  EXPECT_EQ(c.unsupported[0],
            "The financial results for the year ended 31 December 2019 are summarised.");
  EXPECT_EQ(c.unsupported[1], "Revenue rose 9 percent.");
  EXPECT_EQ(c.text,
            "Revenue rose to EUR 2.3bn in the year ended 2025-12-31. [p. 2]\n"
            "Operating profit was EUR 1310 million in 2025. [p. 2]\n"
            "Revenue rose 8% in December 2025. [p. 2]");
  // The words are on page 2 either way; the year is not.
  EXPECT_FALSE(SupportingPage("Revenue rose in the year ended 31 December 2019.", pages));
  EXPECT_TRUE(SupportingPage("Revenue rose in the year ended 31 December 2025.", pages));
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

// The R manual case (issue 55): a numbered list inside chapter 2 is no
// chapter when the file's own outline names the chapters.
TEST(Statements, TheFilesOwnHeadingsMakeTheOutlineWhenItHasThem) {
  const auto pages = SplitPages(
      "[page 1]\nR Data Import\n\n1 Introduction\n\nWhy import data.\n\n"
      "2 Spreadsheet-like data\n\nThree things matter:\n\n1. Header line\n\n2. Separator\n"
      "[page 2]\n3. Missing values\n\n3 IMPORTING FROM OTHER SYSTEMS\n\nEpiInfo, Minitab.\n"
      "[page 3]\nSAS and Stata files.\n[page 4]\n4 Relational databases\n\nDBMS.\n");
  const std::vector<ingest::Heading> headings = {
      {1, "", "R Data Import", 1},
      {2, "1", "Introduction", 1},
      {3, "1.1", "Imports", 1},
      {2, "2", "Spreadsheet-like data", 1},
      {2, "3", "Importing from other systems", 2},  // capitals differ in the text
      {2, "4", "Relational databases", 4}};
  const std::vector<OutlineEntry> o = DocumentOutline(pages, headings);
  ASSERT_EQ(o.size(), 4u);  // level 2: level 1 is the title alone
  EXPECT_EQ(o[0].heading, "1 Introduction");
  EXPECT_EQ(o[0].text, "[page 1]\n1 Introduction\n\nWhy import data.\n\n");
  EXPECT_EQ(o[1].heading, "2 Spreadsheet-like data");
  EXPECT_EQ(o[1].first_page, 1);
  EXPECT_EQ(o[1].last_page, 2);
  EXPECT_NE(o[1].text.find("[page 2]\n3. Missing values"), std::string::npos);
  EXPECT_EQ(o[2].heading, "3 Importing from other systems");
  EXPECT_EQ(o[2].first_page, 2);
  EXPECT_EQ(o[2].last_page, 3);
  EXPECT_EQ(o[2].text.rfind("[page 2]\n3 IMPORTING", 0), 0u) << o[2].text;
  EXPECT_EQ(o[3].first_page, 4);
  EXPECT_EQ(o[3].last_page, 4);
  // Without headings (or with one alone) the text decides, as before.
  EXPECT_EQ(DocumentOutline(pages, {}).size(), DocumentOutline(pages).size());
  EXPECT_EQ(DocumentOutline(pages, {{1, "", "R Data Import", 1}}).size(),
            DocumentOutline(pages).size());
}

TEST(Statements, AppendicesFollowTheNumberedSectionsInSequence) {
  const auto pages = SplitPages(
      "[page 1]\n1. Introduction\n\nText.\n\n2. Queries\n\nMore.\n\n"
      "Appendix B: Out of sequence\n\nStill queries.\n[page 2]\n"
      "Appendix A: Search Application Tips\n\nRank by relevance.\n\n"
      "3. Not after an appendix\n\nText.\n\nAppendix B. Query Syntax\n\nGrammar.\n");
  const std::vector<OutlineEntry> o = DocumentOutline(pages);
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o[1].heading, "2. Queries");
  EXPECT_NE(o[1].text.find("Appendix B: Out of sequence"), std::string::npos);
  EXPECT_EQ(o[2].heading, "Appendix A: Search Application Tips");
  EXPECT_EQ(o[2].first_page, 2);
  EXPECT_NE(o[2].text.find("3. Not after an appendix"), std::string::npos);
  EXPECT_EQ(o[3].heading, "Appendix B. Query Syntax");
  // One numbered section and an appendix are no outline.
  EXPECT_TRUE(
      DocumentOutline(SplitPages("[page 1]\n1. Intro\n\nText.\n\nAppendix A: Notes\n\nx.\n"))
          .empty());
}

TEST(Statements, WithoutNumbersTitleCaseHeadingsMakeTheOutline) {
  const std::string doc =
      "[page 1]\nLimits In SQLite\n\nSizes that can not be exceeded.\n\n"
      "Maximum length of a string or BLOB\n\nOne billion bytes.\n\n"
      "Maximum Number Of Columns\n\nThe default is 2000.\n[page 2]\n"
      "Embedded devices and the internet of things\n\nA good fit.\n\n"
      "Maximum Database Size, Roughly\n\nNo heading: a comma.\n\n"
      "Maximum Number Of Attached Databases\n\nTen.\n";
  const std::vector<OutlineEntry> o = DocumentOutline(SplitPages(doc));
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].heading, "Limits In SQLite");  // the title: the preamble's section
  EXPECT_NE(o[0].text.find("Maximum length of a string"), std::string::npos);  // sentence case
  EXPECT_EQ(o[1].heading, "Maximum Number Of Columns");
  EXPECT_EQ(o[1].last_page, 2);
  EXPECT_NE(o[1].text.find("Embedded devices"), std::string::npos);
  EXPECT_EQ(o[2].heading, "Maximum Number Of Attached Databases");
  // Two such lines are no outline; numbered sections win over Title Case.
  EXPECT_TRUE(DocumentOutline(SplitPages("[page 1]\nOne Title Here\n\nText.\n\n"
                                         "Second Title Here\n\nText.\n"))
                  .empty());
  const auto numbered = DocumentOutline(
      SplitPages("[page 1]\nThe Title\n\n1. Scope\n\nText.\n\nSome Title Case Line\n\nx.\n\n"
                 "2. Terms\n\nText.\n\nAnother Title Case Line\n\ny.\n"));
  ASSERT_EQ(numbered.size(), 2u);
  EXPECT_EQ(numbered[1].heading, "2. Terms");
}

TEST(Statements, KeyTermsMarkASectionOutFromTheOthers) {
  const auto pages = SplitPages(
      "[page 1]\n1. Queries\n\nA query with MATCH finds rows. The table holds rows. "
      "MATCH uses the index; a query with NEAR finds close tokens.\n[page 2]\n"
      "Use NEAR/3 for three tokens. The NEAR operator and MATCH work on the table.\n\n"
      "\xE2\x80\xA2 one \xE2\x80\xA2 two \xE2\x80\xA2 three\n\n"
      "2. Tokenizers\n\nThe porter tokenizer stems. The table holds rows; porter and "
      "unicode61 tokenizers split text. Simply put, porter is simply fixed, fixed, fixed.\n"
      "[page 3]\nThe unicode61 tokenizer folds case. "
      "The integrity-check command checks; integrity-check reads the table. Queries and rows.\n");
  const std::vector<OutlineEntry> o = DocumentOutline(pages);
  ASSERT_EQ(o.size(), 2u);
  const auto terms = SectionKeyTerms(o, 3);
  ASSERT_EQ(terms.size(), 2u);
  std::vector<std::string> first, second;
  for (const KeyTerm& t : terms[0]) first.push_back(t.term);
  for (const KeyTerm& t : terms[1]) second.push_back(t.term);
  // In both sections: "table", "rows" (score 0). In the heading: "queries",
  // "tokenizers". Plain words twice ("finds", "tokens"): too few. Bullets,
  // "simply", "fixed": no terms. Names and codes first.
  EXPECT_EQ(first, (std::vector<std::string>{"MATCH", "NEAR"}));
  EXPECT_EQ(second, (std::vector<std::string>{"unicode61", "integrity-check", "porter"}));
  EXPECT_EQ(terms[0][1].page, 2);  // NEAR: once on p. 1, twice on p. 2
  EXPECT_EQ(terms[0][1].count, 3);
  EXPECT_EQ(terms[1][0].page, 2);  // once on each page: the first
  EXPECT_EQ(terms[1][1].page, 3);
  EXPECT_EQ(terms[1][2].count, 3);
  EXPECT_TRUE(SectionKeyTerms(o, 0)[0].empty());
  EXPECT_TRUE(SectionKeyTerms({}, 5).empty());
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
    const std::vector<OutlineEntry> outline = DocumentOutline(pages);
    for (const OutlineEntry& e : outline) EXPECT_LE(e.first_page, e.last_page);
    for (const auto& terms : SectionKeyTerms(outline, 4)) EXPECT_LE(terms.size(), 4u);
    EXPECT_LE(c.supported, c.statements);
    EXPECT_EQ(c.unsupported.size(), static_cast<size_t>(c.statements - c.supported));
  }
}

}  // namespace
}  // namespace ellm::pipelines
