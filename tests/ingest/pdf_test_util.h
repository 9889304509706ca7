// Shared helpers of the ingest tests: where the test PDFs and the extractor
// are, and the word-level similarity the PDF cases are judged by.
#pragma once

#include <string>
#include <vector>

#include "ellm/ingest/extract.h"

namespace ellm::ingest::testing {

// tests/data/pdf/ in the source tree.
std::string PdfDataDir();
// Options that run the ellm-extract built with the tests.
ExtractOptions TestOptions();
std::string ReadText(const std::string& path);
void WriteBytes(const std::string& path, const std::string& bytes);

// Tokens for comparing texts: whitespace-separated words, except that every
// CJK character is a token of its own (Chinese has no spaces).
std::vector<std::string> Tokens(const std::string& text);
// 1 - (word-level Levenshtein distance between expected and actual tokens)
// / (number of expected tokens), floored at 0. 1.0 means identical words.
double WordSimilarity(const std::string& expected, const std::string& actual);
// Every page's text, joined by "\n\n" (no page markers).
std::string AllText(const Document& doc);

}  // namespace ellm::ingest::testing
