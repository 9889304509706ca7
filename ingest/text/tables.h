// Tables as the model and the checks read them: Markdown, the first row the
// header, each row's cells in their columns. Pure text; both the PDF layout
// (aligned columns, text/paragraphs.h) and the Word/OpenDocument readers
// (office/) hand their rows here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ellm::ingest::text {

// A row as the layout writes it ("Revenue | 1,388") -> its cells, trimmed.
std::vector<std::string> SplitCells(std::string_view row);

// Rows of cells -> a Markdown table:
//   | Item | 2023 |
//   | --- | --- |
//   | Revenue | 1,388 |
// Every row padded to the widest with empty cells; a "|" inside a cell is
// escaped ("\|"), line breaks become spaces. Empty when `rows` is.
std::string MarkdownTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace ellm::ingest::text
