// The extractive backbone (backbone.h): which of a document's own
// sentences carry what it is for, its figures, its risks and its
// conclusions, chosen without a model; and a summary whose model-written
// sections all fail their checks still shows them, quoted with pages.
#include "ellm/pipelines/backbone.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ellm::pipelines {
namespace {

std::vector<Page> Pages(std::vector<std::string> texts) {
  std::vector<Page> pages;
  for (size_t i = 0; i < texts.size(); ++i) pages.push_back({static_cast<int>(i + 1), texts[i]});
  return pages;
}

// A four-page manual: what it is for on page 1, figures and a warning in
// the middle, a closing recommendation at the end, and filler around them.
std::vector<Page> Manual() {
  return Pages({
      "Data Import Guide\n\n"
      "This manual describes how to import data files into the archive database.\n"
      "The archive database stores records from many sources in one place.\n",
      "Records are read from text files with one record on each line of the file.\n"
      "Each import reads at most 50,000 records and stops after 30 seconds of work.\n"
      "Columns are separated by commas, and the first line names the columns.\n"
      "1 2 3 4 5 6 7 8 9 10 11 12 13 14.\n",
      "You must not import a file while the archive database is being backed up, or records "
      "may be lost.\n"
      "Records are checked against the column names before they are stored.\n"
      "The archive database keeps a log of every import with its records and columns.\n",
      "Imports of text files with records and columns are the usual way to fill the archive.\n"
      "In conclusion, we recommend importing small files often rather than large files "
      "rarely.\n",
  });
}

std::string Texts(const std::vector<ChosenSentence>& s) {
  std::string out;
  for (const auto& c : s) out += "[" + std::to_string(c.page) + "] " + c.text + "\n";
  return out;
}

TEST(Backbone, EachPartGetsTheSentencesThatSpeakToIt) {
  const std::vector<Page> pages = Manual();
  const auto purpose = ChooseSentences(pages, BackbonePart::kPurpose, 1);
  ASSERT_EQ(purpose.size(), 1u);
  EXPECT_EQ(purpose[0].text,
            "This manual describes how to import data files into the archive database.");
  EXPECT_EQ(purpose[0].page, 1);
  const auto figures = ChooseSentences(pages, BackbonePart::kFigures, 4);
  ASSERT_EQ(figures.size(), 1u) << Texts(figures);  // the row of numbers is not one
  EXPECT_EQ(figures[0].text,
            "Each import reads at most 50,000 records and stops after 30 seconds of work.");
  EXPECT_EQ(figures[0].page, 2);
  const auto risks = ChooseSentences(pages, BackbonePart::kRisks, 3);
  ASSERT_EQ(risks.size(), 1u) << Texts(risks);
  EXPECT_EQ(risks[0].page, 3);
  EXPECT_NE(risks[0].text.find("You must not import a file"), std::string::npos);
  const auto conclusions = ChooseSentences(pages, BackbonePart::kConclusions, 1);
  ASSERT_EQ(conclusions.size(), 1u);
  EXPECT_EQ(conclusions[0].page, 4);
  EXPECT_NE(conclusions[0].text.find("In conclusion, we recommend"), std::string::npos);
}

TEST(Backbone, NothingIsForcedWhereTheDocumentHasNothingOfThatKind) {
  const std::vector<Page> calm = Pages(
      {"The archive database stores records from many sources in one place for later reading.\n"
       "Records are read from text files with one record on each line of every file.\n"});
  EXPECT_TRUE(ChooseSentences(calm, BackbonePart::kRisks, 3).empty());
  EXPECT_TRUE(ChooseSentences(calm, BackbonePart::kFigures, 3).empty());
  EXPECT_TRUE(ChooseSentences({}, BackbonePart::kPurpose, 3).empty());
  // Headings, code and a sentence cut by the page are no candidates.
  const std::vector<Page> odd =
      Pages({"1. Introduction\n\nint main() { return 0; }\n"
             "and so the records are stored in the archive for years.\n"});
  EXPECT_TRUE(ChooseSentences(odd, BackbonePart::kPurpose, 3).empty());
}

TEST(Backbone, NoSentenceIsChosenTwiceAcrossParts) {
  const std::string warn =
      "This guide warns that you must not delete the archive files while the service runs.\n";
  const std::vector<Page> pages = Pages({warn + warn, warn});
  std::vector<std::vector<std::string>> chosen;
  const auto purpose = ChooseSentences(pages, BackbonePart::kPurpose, 3, &chosen);
  ASSERT_EQ(purpose.size(), 1u) << Texts(purpose);  // the same sentence three times: once
  EXPECT_TRUE(ChooseSentences(pages, BackbonePart::kRisks, 3, &chosen).empty());
  EXPECT_EQ(chosen.size(), 1u);
}

TEST(Backbone, ALongDocumentIsBounded) {
  std::string page;
  for (int i = 0; i < 2000; ++i) {
    page += "Record number " + std::to_string(i) + " of the archive holds a copy of the ledger.\n";
  }
  const std::vector<Page> pages(20, Page{1, page});  // 40,000 sentences
  const auto figures = ChooseSentences(pages, BackbonePart::kFigures, 4);
  EXPECT_EQ(figures.size(), 1u);  // all alike: one of them
}

// Issue 55/56: a figure in a table keeps its row and column labels, so
// "Revenue, 2023: 1,388" is a key figure a reader can check.
TEST(Backbone, AFigureOfATableKeepsItsRowAndColumnLabels) {
  const std::vector<Page> pages =
      Pages({"Income Statement\n\n"
             "The table below summarises the income statement in millions of euros.\n\n"
             "| Item | 2022 | 2023 | Change |\n| --- | --- | --- | --- |\n"
             "| Revenue | 1,204 | 1,388 | +15.3% |\n| Net income | 148 | 213 | +43.9% |\n"
             "| 2024 | 1 | 2 | 3 |\n| Notes | none | n/a | - |\n\n"
             "Net income rose sharply because gross margin widened while costs stayed flat.\n"});
  const auto figures = ChooseSentences(pages, BackbonePart::kFigures, 4);
  ASSERT_EQ(figures.size(), 2u) << Texts(figures);  // no label, no figure: not chosen
  EXPECT_EQ(figures[0].text, "Revenue \u2014 2022: 1,204; 2023: 1,388; Change: +15.3%");
  EXPECT_TRUE(figures[0].table);
  EXPECT_EQ(figures[1].text, "Net income \u2014 2022: 148; 2023: 213; Change: +43.9%");
  EXPECT_EQ(QuotedLines({figures[0]}),
            "- Revenue \u2014 2022: 1,204; 2023: 1,388; Change: +15.3% [p. 1, table]");
  // A page that ends with a table row (no line after it) is read too.
  const std::vector<Page> last = Pages({"| Item | 2023 |\n| --- | --- |\n| Revenue | 1,388 |"});
  ASSERT_EQ(ChooseSentences(last, BackbonePart::kFigures, 2).size(), 1u);
  // Rows are figures only: never a risk, a purpose or a conclusion.
  for (BackbonePart part :
       {BackbonePart::kPurpose, BackbonePart::kRisks, BackbonePart::kConclusions}) {
    for (const auto& c : ChooseSentences(pages, part, 5)) EXPECT_FALSE(c.table) << c.text;
  }
}

TEST(Backbone, QuotedLinesSayTheyAreTheDocumentsOwnWords) {
  EXPECT_EQ(QuotedLines({{"It stores records.", 3, 1.0}, {"It has no page.", 0, 0.5}}),
            "- \u201cIt stores records.\u201d [p. 3]\n- \u201cIt has no page.\u201d");
  EXPECT_EQ(ParseBackbonePart("risks"), BackbonePart::kRisks);
  EXPECT_FALSE(ParseBackbonePart("Risks").has_value());
  EXPECT_STREQ(BackbonePartName(BackbonePart::kConclusions), "conclusions");
}

}  // namespace
}  // namespace ellm::pipelines
