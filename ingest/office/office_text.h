// What the Word and OpenDocument readers share: DocumentBuilder assembles
// paragraphs, headings, table rows and page breaks into a Document the way
// the PDF path lays out its text (paragraphs separated by a blank line,
// table rows as "cell | cell" lines), and the list-number formats both
// formats name (decimal, letters, Roman numerals).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ellm/ingest/document.h"

namespace ellm::ingest::office {

// The outside-input bounds both readers apply (STYLE: depth, size, steps).
inline constexpr int kMaxXmlDepth = 200;                     // element nesting we walk
inline constexpr int64_t kMaxPartBytes = int64_t{64} << 20;  // one XML part, expanded

class DocumentBuilder {
 public:
  // One paragraph of body text; whitespace runs collapse, empty ones vanish.
  void Paragraph(std::string_view text);
  // A heading paragraph: appears in the text as "number title" and in the
  // heading tree. `number` may be empty; a number written into `text`
  // itself ("2.1 Fees") is split off (text::SplitHeadingNumber).
  void Heading(int level, std::string_view number, std::string_view text);
  // One row of a table; consecutive rows form one Markdown table, the first
  // its header (a row of empty cells is dropped).
  void TableRow(const std::vector<std::string>& cells);
  // Starts a new page (an explicit page break); no-op on an empty page.
  void PageBreak();
  bool empty() const;

  // The pages (NFC, tidy whitespace) and headings; metadata.media_type and
  // page_count are set, the rest is the caller's.
  Document Finish(std::string_view media_type);

 private:
  void Block(const std::string& text);  // a paragraph, after any table being read
  void Append(const std::string& text);
  void FlushTable();  // the rows read so far, as one Markdown table (text/tables.h)

  std::vector<Page> pages_{Page{1, ""}};
  std::vector<ingest::Heading> headings_;
  std::vector<std::vector<std::string>> table_;
};

enum class NumberFormat { kDecimal, kLowerLetter, kUpperLetter, kLowerRoman, kUpperRoman, kNone };
// `n` (>= 1) written in `format`: 3 -> "3", "c", "C", "iii", "III", "".
std::string FormatNumber(int n, NumberFormat format);

}  // namespace ellm::ingest::office
