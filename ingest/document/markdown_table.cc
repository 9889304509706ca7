#include "ellm/ingest/markdown_table.h"

#include <algorithm>

namespace ellm::ingest {
namespace {

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::string Cell(std::string_view text) {
  std::string out;
  for (char c : Trim(text)) {
    if (c == '|') out += '\\';
    out += c == '\n' || c == '\r' ? ' ' : c;
  }
  return out;
}

}  // namespace

std::vector<std::string> SplitCells(std::string_view row) {
  std::vector<std::string> cells;
  size_t at = 0;
  for (;;) {
    const size_t bar = row.find(" | ", at);
    if (bar == std::string_view::npos) {
      cells.push_back(Trim(row.substr(at)));
      return cells;
    }
    cells.push_back(Trim(row.substr(at, bar - at)));
    at = bar + 3;
  }
}

std::string MarkdownTable(const std::vector<std::vector<std::string>>& rows) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  if (width == 0) return "";
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += "\n";
    out += "|";
    for (size_t c = 0; c < width; ++c) {
      const std::string cell = c < rows[i].size() ? Cell(rows[i][c]) : "";
      out += cell.empty() ? " |" : " " + cell + " |";
    }
    if (i == 0) {
      out += "\n|";
      for (size_t c = 0; c < width; ++c) out += " --- |";
    }
  }
  return out;
}

std::optional<std::vector<std::string>> ParseMarkdownRow(std::string_view line) {
  const std::string t = Trim(line);
  if (t.size() < 2 || t.front() != '|' || t.back() != '|') return std::nullopt;
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i] == '\\' && t[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (t[i] == '|') {
      cells.push_back(Trim(cell));
      cell.clear();
    } else {
      cell += t[i];
    }
  }
  cells.push_back(Trim(cell));
  return cells;
}

bool IsMarkdownRule(std::string_view line) {
  const auto cells = ParseMarkdownRow(line);
  if (!cells) return false;
  for (const std::string& c : *cells) {
    if (c.size() < 3 || c.find_first_not_of("-:") != std::string::npos) return false;
  }
  return true;
}

}  // namespace ellm::ingest
