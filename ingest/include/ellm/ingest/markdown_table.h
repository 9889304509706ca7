// Tables as the model and the checks read them: Markdown in a page's text,
// the first row the header, each row's cells in their columns. Part of the
// document model: the PDF layout (aligned columns, text/paragraphs.h) and
// the Word/OpenDocument readers (office/) write them here; the pipelines read
// them back (a key figure keeps its row and column labels).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ellm::ingest {

// A row as the layout writes it ("Revenue | 1,388") -> its cells, trimmed.
std::vector<std::string> SplitCells(std::string_view row);

// Rows of cells -> a Markdown table:
//   | Item | 2023 |
//   | --- | --- |
//   | Revenue | 1,388 |
// Every row padded to the widest with empty cells; a "|" inside a cell is
// escaped ("\|"), line breaks become spaces. Empty when `rows` is.
std::string MarkdownTable(const std::vector<std::vector<std::string>>& rows);

// One line of a Markdown table ("| Revenue | 1,388 |") -> its cells,
// unescaped; nullopt for a line that is not one. The rule line under the
// header ("| --- | --- |") is one; IsMarkdownRule tells it apart.
std::optional<std::vector<std::string>> ParseMarkdownRow(std::string_view line);
bool IsMarkdownRule(std::string_view line);

}  // namespace ellm::ingest
