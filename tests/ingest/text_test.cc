// Text post-processing without PDFs: normalisation, running lines, hyphen
// repair and paragraph assembly.
#include <gtest/gtest.h>

#include "ellm/ingest/markdown_table.h"
#include "text/layout_headings.h"
#include "text/normalize.h"
#include "text/paragraphs.h"
#include "text/running_lines.h"

namespace ellm::ingest::text {
namespace {

TEST(NormalizeText, ComposesToNfcAndExpandsLigatures) {
  EXPECT_EQ(NormalizeText("Cafe\xCC\x81"), "Caf\xC3\xA9");  // e + U+0301 -> é
  EXPECT_EQ(NormalizeText("\xEF\xAC\x81nancial \xEF\xAC\x82ow e\xEF\xAC\x83"
                          "cient"),
            "financial flow efficient");
  EXPECT_EQ(NormalizeText("plain ascii stays"), "plain ascii stays");
}

TEST(NormalizeText, MapsOddSpacesAndDropsInvisibles) {
  EXPECT_EQ(NormalizeText("a\xC2\xA0"
                          "b\xE2\x80\x83"
                          "c\tz"),
            "a b c z");  // NBSP, em space, tab
  EXPECT_EQ(NormalizeText("in\xE2\x80\x8Bvisible\xEF\xBB\xBF"), "invisible");  // ZWSP, BOM
  EXPECT_EQ(NormalizeText("x\xEE\x80\x81y"), "xy");                            // private use
  EXPECT_EQ(NormalizeText("non\xE2\x80\x91"
                          "breaking"),
            "non-breaking");
  EXPECT_EQ(NormalizeText("soft\xC2\xAD"), "soft\xC2\xAD");  // kept for hyphen repair
}

TEST(NormalizeText, ReplacesInvalidUtf8) {
  const std::string out = NormalizeText("ok\xFF\xC3(");
  EXPECT_TRUE(IsValidUtf8(out));
  EXPECT_EQ(out, "ok\xEF\xBF\xBD\xEF\xBF\xBD(");
}

TEST(TidyWhitespace, CollapsesSpacesAndBlankLines) {
  EXPECT_EQ(TidyWhitespace("  a   b \n\n\n\n c\n d  \n\n"), "a b\n\nc\nd\n");
  EXPECT_EQ(TidyWhitespace(" \n \n"), "");
}

TEST(RepetitionKey, MasksNumbersAndCase) {
  EXPECT_EQ(RepetitionKey("Page 12 of 40"), "page # of #");
  EXPECT_EQ(RepetitionKey("  ANNUAL   Report 2023 "), "annual report #");
  EXPECT_EQ(RepetitionKey("xiv"), "#");
}

PageLines Page(std::initializer_list<std::string> lines) {
  PageLines page;
  for (const std::string& l : lines) page.push_back({l, LineBreak::kParagraph, false});
  return page;
}

TEST(RemoveRunningLines, RemovesRepeatedHeadersFootersAndPageNumbers) {
  std::vector<PageLines> pages;
  const char* bodies[] = {"Revenue grew.", "Costs fell.", "Cash rose.", "Debt was repaid."};
  const char* more[] = {"Alpha details.", "Beta details.", "Gamma details.", "Delta details."};
  for (int n = 1; n <= 4; ++n) {
    pages.push_back(Page({"ACME Corp Annual Report 2023", std::string(bodies[n - 1]),
                          std::string(more[n - 1]), "Page " + std::to_string(n) + " of 4"}));
  }
  EXPECT_EQ(RemoveRunningLines(&pages), 8);
  for (int n = 0; n < 4; ++n) {
    ASSERT_EQ(pages[n].size(), 2u);
    EXPECT_EQ(pages[n][0].text, bodies[n]);
  }
}

TEST(RemoveRunningLines, KeepsLinesThatRepeatOnFewPages) {
  std::vector<PageLines> pages = {Page({"Introduction", "alpha"}), Page({"beta", "gamma"}),
                                  Page({"delta", "epsilon"}),      Page({"Introduction", "zeta"}),
                                  Page({"eta", "theta"}),          Page({"iota", "kappa"})};
  EXPECT_EQ(RemoveRunningLines(&pages), 0);
}

TEST(RemoveRunningLines, HandlesAlternatingHeaders) {
  std::vector<PageLines> pages;
  for (int n = 1; n <= 6; ++n) {
    pages.push_back(
        Page({n % 2 ? "Chapter One: Results" : "The Annual Report",
              "body " + std::string(1, static_cast<char>('a' + n)), std::to_string(n)}));
  }
  EXPECT_EQ(RemoveRunningLines(&pages), 12);
  EXPECT_EQ(pages[2][0].text, "body d");
}

TEST(JoinHyphenated, RepairsBreaksAndKeepsRealHyphens) {
  HyphenEvidence ev;
  ev.AddLine("a state-of-the-art plant");
  ev.AddLine("an e-mail and the email");
  EXPECT_EQ(JoinHyphenated("its reve-", "nue grew", ev), "its revenue grew");
  EXPECT_EQ(JoinHyphenated("a state-of-the-", "art line", ev), "a state-of-the-art line");
  EXPECT_EQ(JoinHyphenated("a self-", "assessment", ev), "a self-assessment");
  EXPECT_EQ(JoinHyphenated("a well-", "known firm", ev), "a well-known firm");
  EXPECT_EQ(JoinHyphenated("in 2019-", "2023", ev), "in 2019-2023");
  EXPECT_EQ(JoinHyphenated("COVID-", "19 cases", ev), "COVID-19 cases");
  EXPECT_EQ(JoinHyphenated("Anglo-", "Saxon", ev), "Anglo-Saxon");
  EXPECT_EQ(JoinHyphenated("send an e-", "mail", ev), "send an email");  // joined form seen too
  EXPECT_EQ(JoinHyphenated("soft\xC2\xAD", "ware", ev), "software");
}

TEST(HyphenEvidence, IgnoresTheBrokenWordAtALineEnd) {
  HyphenEvidence ev;
  ev.AddLine("the opera-");
  EXPECT_FALSE(ev.Has("opera-"));
  EXPECT_FALSE(ev.Has("opera"));
  EXPECT_TRUE(ev.Has("the"));
}

TEST(AssemblePage, BuildsParagraphsAndTables) {
  HyphenEvidence ev;
  PageLines lines = {
      {"Results", LineBreak::kBlock, false},
      {"Sales rose by a third, and the reve-", LineBreak::kParagraph, false},
      {"nue of the", LineBreak::kNone, false},
      {"group doubled.", LineBreak::kBlock, false},  // next column, sentence goes on
      {"Item | 2023", LineBreak::kParagraph, true},
      {"Revenue | 1,388", LineBreak::kParagraph, true},
      {"After the table.", LineBreak::kParagraph, false},
      {"New column.", LineBreak::kBlock, false},  // the sentence had ended
  };
  EXPECT_EQ(
      AssemblePage(lines, ev),
      "Results\n\nSales rose by a third, and the revenue of the group doubled.\n\n"
      "| Item | 2023 |\n| --- | --- |\n| Revenue | 1,388 |\n\nAfter the table.\n\nNew column.");
}

// Rows of unequal width are padded; a "|" inside a cell is escaped.
TEST(MarkdownTable, PadsRowsAndEscapesBars) {
  using ingest::MarkdownTable, ingest::SplitCells, ingest::ParseMarkdownRow;
  EXPECT_EQ(MarkdownTable({{"Year", "A|B", "Total"}, {"2025", "1"}}),
            "| Year | A\\|B | Total |\n| --- | --- | --- |\n| 2025 | 1 | |");
  EXPECT_EQ(MarkdownTable({}), "");
  EXPECT_EQ(SplitCells(" Revenue |  1,388 | "), (std::vector<std::string>{"Revenue", "1,388", ""}));
  EXPECT_EQ(SplitCells("a | b | c"), (std::vector<std::string>{"a", "b", "c"}));
  // Read back as written.
  EXPECT_EQ(ParseMarkdownRow("| Year | A\\|B | |"), (std::vector<std::string>{"Year", "A|B", ""}));
  EXPECT_FALSE(ParseMarkdownRow("Year | Total").has_value());
  EXPECT_TRUE(ingest::IsMarkdownRule("| --- | :---: |"));
  EXPECT_FALSE(ingest::IsMarkdownRule("| 2025 | --- |"));
}

TEST(AssemblePage, JoinsCjkLinesWithoutSpaces) {
  HyphenEvidence ev;
  PageLines lines = {{"\xE6\x9C\xAC\xE5\x85\xAC\xE5\x8F\xB8", LineBreak::kBlock, false},  // 本公司
                     {"\xE5\xA2\x9E\xE9\x95\xBF", LineBreak::kNone, false}};              // 增长
  EXPECT_EQ(AssemblePage(lines, ev),
            "\xE6\x9C\xAC\xE5\x85\xAC\xE5\x8F\xB8\xE5\xA2\x9E\xE9\x95\xBF");
}

// Issue 55: a PDF without an outline gets its headings from the layout:
// lines standing alone in a font larger than the body's (or bold at its
// size), levels by size; numbered ones of one depth share a level (a
// section title partly in code font is no deeper); a style
// seen only on the title page, a contents line and a sentence are not
// headings.
TEST(HeadingsFromLayout, LinesSetApartByTheirFontAreTheHeadingTree) {
  auto body = [](const std::string& t, LineBreak b = LineBreak::kNone) {
    return TextLine{t, b, false, 10, false};
  };
  auto heading = [](const std::string& t, double size, bool bold = false) {
    return TextLine{t, LineBreak::kParagraph, false, size, bold};
  };
  const std::string para = "The archive keeps every record of the ledger for later reading";
  std::vector<PageLines> pages = {
      {heading("Ledger Manual", 30), heading("Contents . . . . . 2", 14)},
      {heading("1 Introduction", 16), body(para, LineBreak::kParagraph), body(para),
       heading("1.1 Records", 12), body(para, LineBreak::kParagraph), body(para)},
      {heading("1.2 Keeping records in code_font", 13), body(para, LineBreak::kParagraph),
       body(para), heading("Note", 10, true), body(para, LineBreak::kParagraph),
       heading("A large sentence that ends here.", 16), body(para, LineBreak::kParagraph)},
      {heading("2 Reports", 16), body(para, LineBreak::kParagraph), body(para),
       heading("2.1 Totals", 12), body(para, LineBreak::kParagraph), body(para)},
  };
  std::vector<std::string> seen;
  for (const Heading& h : HeadingsFromLayout(pages)) {
    seen.push_back(std::to_string(h.level) + " " + h.number + "|" + h.title + " p" +
                   std::to_string(h.page));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"1 1|Introduction p2", "2 1.1|Records p2",
                                            "2 1.2|Keeping records in code_font p3", "3 |Note p3",
                                            "1 2|Reports p4", "2 2.1|Totals p4"}));
}

}  // namespace
}  // namespace ellm::ingest::text
