// Reading order from synthetic word boxes (no PDF, no poppler).
#include "pdf/layout.h"

#include "cpu_time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <tuple>

namespace ellm::ingest::pdf {
namespace {

using text::LineBreak;
using text::TextLine;

// Lays out `line` as words starting at (x, y) in a font of height `h`,
// 0.55h per character and 0.3h between words.
void AddLine(std::vector<Word>* words, const std::string& line, double x, double y, double h = 10) {
  std::istringstream in(line);
  std::string w;
  while (in >> w) {
    const double width = 0.55 * h * static_cast<double>(w.size());
    words->push_back({w, x, y, x + width, y + h, true, true});
    x += width + 0.3 * h;
  }
}

std::string Joined(const std::vector<TextLine>& lines) {
  std::string out;
  for (const TextLine& l : lines) out += l.text + "\n";
  return out;
}

TEST(LayoutPage, ReadsColumnsOneAfterTheOther) {
  std::vector<Word> words;
  AddLine(&words, "A Title Across The Whole Page Width Here", 50, 40, 16);
  for (int i = 0; i < 6; ++i) {
    AddLine(&words, "left line " + std::to_string(i), 50, 80 + 13 * i);
    AddLine(&words, "right line " + std::to_string(i), 320, 80 + 13 * i);
  }
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 13u) << Joined(lines);
  EXPECT_EQ(lines[0].text, "A Title Across The Whole Page Width Here");
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(lines[1 + i].text, "left line " + std::to_string(i));
    EXPECT_EQ(lines[7 + i].text, "right line " + std::to_string(i));
  }
  EXPECT_EQ(lines[7].break_before, LineBreak::kBlock);  // jump to the next column
  EXPECT_EQ(lines[2].break_before, LineBreak::kNone);
}

TEST(LayoutPage, MovesAnInteriorFootnoteAfterTheBody) {
  std::vector<Word> words;
  for (int i = 0; i < 5; ++i)
    AddLine(&words, "left body line " + std::to_string(i), 50, 80 + 13 * i);
  AddLine(&words, "1 A footnote under the left column.", 50, 160, 6);
  for (int i = 0; i < 5; ++i) {
    AddLine(&words, "right body line " + std::to_string(i), 320, 80 + 13 * i);
  }
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 11u) << Joined(lines);
  EXPECT_EQ(lines[4].text, "left body line 4");
  EXPECT_EQ(lines[5].text, "right body line 0");
  EXPECT_EQ(lines[10].text, "1 A footnote under the left column.");
  EXPECT_EQ(lines[10].break_before, LineBreak::kBlock);
}

TEST(LayoutPage, KeepsTableRowsWithDelimitedCells) {
  std::vector<Word> words;
  AddLine(&words, "Some text above the table that is long.", 50, 40);
  const char* rows[][3] = {
      {"Item", "2022", "2023"}, {"Revenue", "1,204", "1,388"}, {"Net income", "148", "213"}};
  for (int r = 0; r < 3; ++r) {
    AddLine(&words, rows[r][0], 50, 70 + 14 * r);
    AddLine(&words, rows[r][1], 250, 70 + 14 * r);
    AddLine(&words, rows[r][2], 350, 70 + 14 * r);
  }
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 4u) << Joined(lines);
  EXPECT_FALSE(lines[0].table_row);
  EXPECT_EQ(lines[1].text, "Item | 2022 | 2023");
  EXPECT_EQ(lines[2].text, "Revenue | 1,204 | 1,388");
  EXPECT_EQ(lines[3].text, "Net income | 148 | 213");
  EXPECT_TRUE(lines[3].table_row);
}

// Issue 55 (bench/tables.py): LibreOffice sets table cells closer than a
// segment gap ("85,944 EUR 64.6m EUR 2.2m" reads as one run of words). The
// columns are cut where every row leaves a strip empty or where cells start
// at one x, and rows that keep those columns join the table. Word boxes as
// LibreOffice 7.4 wrote them (poppler's coordinates, 11 pt text).
TEST(LayoutPage, SplitsTightlySetColumnsWhereEveryRowAlignsThem) {
  std::vector<Word> words;
  auto row = [&](double y, std::vector<std::tuple<std::string, double, double>> cells) {
    for (const auto& [text, x0, x1] : cells)
      words.push_back({text, x0, y, x1, y + 14.3, true, true});
  };
  row(59.25, {{"North", 58.2, 88.9},
              {"56,640", 179.0, 217.5},
              {"85,585", 225.6, 264.1},
              {"89.0%", 294.6, 329.5}});
  row(89.05, {{"Training", 58.2, 103.1},
              {"hours", 106.6, 137.5},
              {"46,072", 179.0, 217.5},
              {"51,406", 225.6, 264.1},
              {"14,855", 294.6, 333.1}});
  row(118.75, {{"Units", 58.2, 86.3},
               {"shipped", 89.8, 133.2},
               {"n/a", 179.0, 196.4},
               {"18,510", 225.6, 264.1},
               {"824", 294.6, 315.6}});
  row(148.55, {{"Returns", 58.2, 101.1},
               {"85,944", 179.0, 217.5},
               {"EUR", 225.6, 248.2},
               {"64.6m", 251.7, 286.9},
               {"EUR", 294.6, 317.2},
               {"2.2m", 320.7, 348.9}});
  const std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 4u) << Joined(lines);
  for (const TextLine& l : lines) EXPECT_TRUE(l.table_row) << l.text;
  EXPECT_EQ(lines[1].text, "Training hours | 46,072 | 51,406 | 14,855");
  EXPECT_EQ(lines[3].text, "Returns | 85,944 | EUR 64.6m | EUR 2.2m");
}

// A hostile page: 400 rows of 25 aligned figures, all but every fourth row
// set tight (the cells run together, so only the columns can join them to
// a table). The work stays bounded.
TEST(LayoutPage, AHugeAlignedGridIsReadInBoundedTime) {
  std::vector<Word> words;
  for (int r = 0; r < 400; ++r) {
    const double width = r % 4 == 0 || r < 3 ? 30 : 41;  // column starts 44 apart
    for (int c = 0; c < 25; ++c) {
      const double x = 20 + c * 44;
      words.push_back(
          {std::to_string(r * 25 + c), x, 20.0 + r * 12, x + width, 30.0 + r * 12, true, true});
    }
  }
  const double t0 = ::ellm::testing::ThreadCpuSeconds();
  const std::vector<TextLine> lines = LayoutPage(words);
  const double took = ::ellm::testing::ThreadCpuSeconds() - t0;
  EXPECT_LT(took, 5.0 * ::ellm::testing::kSanitizerSlowdown);
  size_t rows = 0;
  for (const TextLine& l : lines) rows += l.table_row;
  // The three rows found by their gaps, and 64 that join by their columns
  // (the bound: each join cuts the columns again); the rest is text.
  EXPECT_EQ(rows, 3u + 64u) << Joined(lines).substr(0, 2000);
}

TEST(LayoutPage, MarksParagraphGapsAndIgnoresBadBoxes) {
  std::vector<Word> words;
  AddLine(&words, "first paragraph line one", 50, 40);
  AddLine(&words, "first paragraph line two", 50, 53);
  AddLine(&words, "second paragraph", 50, 80);
  words.push_back({"nan", std::nan(""), 0, 1, 1, true, true});
  words.push_back({"", 0, 0, 1, 1, true, true});
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 3u) << Joined(lines);
  EXPECT_EQ(lines[1].break_before, LineBreak::kNone);
  EXPECT_EQ(lines[2].break_before, LineBreak::kParagraph);
  EXPECT_TRUE(LayoutPage({}).empty());
}

TEST(LayoutPage, ALineEndingASentenceShortOfItsColumnEndsAParagraph) {
  // No extra space between paragraphs: what LibreOffice and Word print.
  std::vector<Word> words;
  AddLine(&words, "The Customer shall pay the Provider a monthly fee within", 50, 40);
  AddLine(&words, "thirty days of the date of each invoice.", 50, 53);
  AddLine(&words, "Either party may terminate this Agreement by giving notice", 50, 66);
  AddLine(&words, "in writing. Notice takes effect when it is received by", 50, 79);
  AddLine(&words, "the other party.", 50, 92);
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 5u) << Joined(lines);
  EXPECT_EQ(lines[1].break_before, LineBreak::kNone);
  EXPECT_EQ(lines[2].break_before, LineBreak::kParagraph);  // "invoice." ends short
  EXPECT_EQ(lines[3].break_before, LineBreak::kNone);       // "notice" has no full stop
  EXPECT_EQ(lines[4].break_before, LineBreak::kNone);       // "the" is lower case
}

TEST(LayoutPage, KeepsListItemsWithTheirHangingIndent) {
  std::vector<Word> words;
  AddLine(&words, "\xE2\x80\xA2 First item that wraps onto", 50, 40);
  AddLine(&words, "a second line.", 62, 53);
  AddLine(&words, "\xE2\x80\xA2 Second item.", 50, 66);
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 3u) << Joined(lines);
  EXPECT_EQ(lines[1].break_before, LineBreak::kNone);
  EXPECT_EQ(lines[2].break_before, LineBreak::kParagraph);
}

TEST(LayoutPage, ReadsNumberedRowsRowByRow) {
  std::vector<Word> words;
  for (int i = 1; i <= 4; ++i) {
    AddLine(&words, "2." + std::to_string(i), 50, 40 + 14 * i);
    AddLine(&words, "Section title number " + std::to_string(i), 90, 40 + 14 * i);
  }
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 4u) << Joined(lines);
  EXPECT_EQ(lines[0].text, "2.1 Section title number 1");
  EXPECT_EQ(lines[3].text, "2.4 Section title number 4");
}

TEST(LayoutPage, DropsWordsDrawnTwiceForBoldface) {
  std::vector<Word> words;
  AddLine(&words, "Bold", 50, 40);
  AddLine(&words, "Bold", 50.3, 40.2);
  AddLine(&words, "heading", 78.5, 40);
  std::vector<TextLine> lines = LayoutPage(words);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "Bold heading");
}

}  // namespace
}  // namespace ellm::ingest::pdf
