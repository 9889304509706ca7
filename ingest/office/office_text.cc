// DocumentBuilder and the numbering helpers (see office_text.h).
#include "office/office_text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>

#include "ellm/ingest/markdown_table.h"
#include "text/headings.h"
#include "text/normalize.h"

namespace ellm::ingest::office {
namespace {

// NFC and one space between words; keeps line breaks a paragraph holds.
std::string Clean(std::string_view raw) {
  const std::string normal = text::NormalizeText(raw);
  std::string out;
  out.reserve(normal.size());
  for (char c : normal) {
    if (c == ' ' && (out.empty() || out.back() == ' ' || out.back() == '\n')) continue;
    if (c == '\n' && !out.empty() && out.back() == ' ') out.pop_back();
    out += c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

}  // namespace

void DocumentBuilder::Block(const std::string& text) {
  FlushTable();
  Append(text);
}

void DocumentBuilder::Append(const std::string& text) {
  if (text.empty()) return;
  std::string& page = pages_.back().text;
  if (!page.empty()) page += "\n\n";
  page += text;
}

void DocumentBuilder::FlushTable() {
  if (table_.empty()) return;
  const std::string markdown = ingest::MarkdownTable(table_);
  table_.clear();
  Append(markdown);
}

void DocumentBuilder::Paragraph(std::string_view text) { Block(Clean(text)); }

void DocumentBuilder::Heading(int level, std::string_view number, std::string_view text) {
  std::string clean = Clean(text);
  std::string num = Clean(number);
  std::string title = clean;
  if (num.empty()) {
    std::tie(num, title) = text::SplitHeadingNumber(clean);
  } else {
    while (!num.empty() && (num.back() == '.' || num.back() == ')')) num.pop_back();
    clean = Clean(std::string(number) + " " + clean);
  }
  if (title.empty() && num.empty()) return;
  for (char& c : title) c = c == '\n' ? ' ' : c;
  headings_.push_back({level, num, title, pages_.back().number});
  Block(clean);
}

void DocumentBuilder::TableRow(const std::vector<std::string>& cells) {
  std::vector<std::string> row;
  bool any = false;
  for (const std::string& cell : cells) {
    std::string c = Clean(cell);
    for (char& ch : c) ch = ch == '\n' ? ' ' : ch;
    any = any || !c.empty();
    row.push_back(std::move(c));
  }
  if (any) table_.push_back(std::move(row));
}

void DocumentBuilder::PageBreak() {
  FlushTable();
  if (pages_.back().text.empty()) return;
  pages_.push_back({pages_.back().number + 1, ""});
}

bool DocumentBuilder::empty() const {
  if (!table_.empty()) return false;
  for (const Page& p : pages_) {
    if (!p.text.empty()) return false;
  }
  return true;
}

Document DocumentBuilder::Finish(std::string_view media_type) {
  FlushTable();
  if (pages_.size() > 1 && pages_.back().text.empty()) pages_.pop_back();
  Document doc;
  doc.metadata.media_type = std::string(media_type);
  for (Page& p : pages_) p.text = text::TidyWhitespace(p.text);
  doc.metadata.page_count = static_cast<int>(pages_.size());
  doc.pages = std::move(pages_);
  doc.headings = std::move(headings_);
  pages_ = {Page{1, ""}};
  headings_.clear();
  return doc;
}

std::string FormatNumber(int n, NumberFormat format) {
  switch (format) {
    case NumberFormat::kNone:
      return "";
    case NumberFormat::kDecimal:
      return std::to_string(n);
    case NumberFormat::kLowerLetter:
    case NumberFormat::kUpperLetter: {
      // Word and LibreOffice: a..z, then aa..zz, aaa..
      const char base = format == NumberFormat::kLowerLetter ? 'a' : 'A';
      if (n < 1) return std::to_string(n);
      return std::string(std::min<size_t>(static_cast<size_t>((n - 1) / 26 + 1), 64),
                         static_cast<char>(base + (n - 1) % 26));
    }
    case NumberFormat::kLowerRoman:
    case NumberFormat::kUpperRoman: {
      if (n < 1 || n >= 4000) return std::to_string(n);
      static constexpr std::array<std::pair<int, const char*>, 13> kRoman = {{{1000, "M"},
                                                                              {900, "CM"},
                                                                              {500, "D"},
                                                                              {400, "CD"},
                                                                              {100, "C"},
                                                                              {90, "XC"},
                                                                              {50, "L"},
                                                                              {40, "XL"},
                                                                              {10, "X"},
                                                                              {9, "IX"},
                                                                              {5, "V"},
                                                                              {4, "IV"},
                                                                              {1, "I"}}};
      std::string out;
      for (const auto& [value, letters] : kRoman) {
        for (; n >= value; n -= value) out += letters;
      }
      if (format == NumberFormat::kLowerRoman) {
        for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      return out;
    }
  }
  return std::to_string(n);
}

}  // namespace ellm::ingest::office
