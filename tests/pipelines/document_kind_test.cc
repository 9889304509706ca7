// Issue 56 item 4: which kind of document a summary is for, from the
// document's own words (document_kind.h), and a contract's obligations as
// the backbone chooses them (backbone.h kObligations).
#include "ellm/pipelines/document_kind.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ellm/pipelines/backbone.h"
#include "test_env.h"

namespace ellm::pipelines {
namespace {

std::vector<Page> OnePage(const std::string& text) { return {Page{1, text}}; }

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DocumentKind, AContractDefinesItsParties) {
  const std::string a = Read(::ellm::testing::SourceDir() + "/tests/data/contracts/services/a.txt");
  const DocumentKind k = ClassifyDocument("", OnePage(a), 0);
  EXPECT_EQ(k.kind, "contract");
  EXPECT_EQ(k.why, "it defines the parties Provider and Customer");
  // B names them "hereinafter referred to as": the same kind.
  const std::string b = Read(::ellm::testing::SourceDir() + "/tests/data/contracts/services/b.txt");
  EXPECT_EQ(ClassifyDocument("", OnePage(b), 0).kind, "contract");
}

TEST(DocumentKind, ALicenceBindsWithShallInNumberedClauses) {
  std::string text = "This License governs use of the software.\n\n";
  for (int i = 1; i <= 6; ++i) {
    text += std::to_string(i) + ". Term " + std::to_string(i) +
            ". The licensee shall keep this notice.\n\n";
  }
  const DocumentKind k = ClassifyDocument("", OnePage(text), 0);
  EXPECT_EQ(k.kind, "contract");
  EXPECT_NE(k.why.find("\"this license\""), std::string::npos) << k.why;
}

TEST(DocumentKind, AManualCallsItselfOne) {
  const std::vector<Page> pages = {{1,
                                    "R Data Import/Export\n\nThis manual describes the import "
                                    "and export facilities."},
                                   {2, "1 Introduction"},
                                   {3, "2 Spreadsheet-like data"}};
  const DocumentKind k = ClassifyDocument("R Data Import/Export", pages, 12);
  EXPECT_EQ(k.kind, "manual");
  EXPECT_EQ(k.why, "it calls itself a manual");
  // One page without headings is not enough to be a manual.
  EXPECT_EQ(ClassifyDocument("", {pages[0]}, 0).kind, "report");
}

TEST(DocumentKind, AReportIsTheDefaultAndWinsOverGuideWords) {
  const std::vector<Page> pages = {
      {1, "Annual Report 2025\n\nThis report guides the board through the year."},
      {2, "Revenue rose."},
      {3, "Outlook."}};
  EXPECT_EQ(ClassifyDocument("Annual Report 2025", pages, 5).kind, "report");
  EXPECT_EQ(ClassifyDocument("", OnePage("Sales rose by 5 percent."), 0).why, "the default");
}

TEST(Backbone, AContractsObligationsAreItsShallSentences) {
  const std::vector<Page> pages = OnePage(
      "This Agreement is made between Alpha Ltd (the \"Supplier\") and Beta plc (the "
      "\"Buyer\").\n\n1. Delivery. The Supplier shall deliver the goods within 30 days of each "
      "order.\n\n2. Payment. The Buyer shall pay each invoice within 45 days of receipt.\n\n3. "
      "Notices. Notices are sent by email to the addresses above.\n\n4. Warranty. The Supplier "
      "warrants that the goods are free from defects, and the Buyer must inspect them on "
      "arrival.");
  const std::vector<ChosenSentence> got = ChooseSentences(pages, BackbonePart::kObligations, 3);
  std::vector<std::string> texts;
  for (const ChosenSentence& s : got) texts.push_back(s.text);
  ASSERT_EQ(texts.size(), 3u);
  EXPECT_NE(texts[0].find("The Supplier shall deliver the goods"), std::string::npos);
  EXPECT_NE(texts[1].find("The Buyer shall pay each invoice"), std::string::npos);
  EXPECT_NE(texts[2].find("the Buyer must inspect them"), std::string::npos);
  EXPECT_EQ(ParseBackbonePart("obligations"), BackbonePart::kObligations);
}

}  // namespace
}  // namespace ellm::pipelines
