#include "pdf_test_util.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "text/normalize.h"

namespace ellm::ingest::testing {

std::string PdfDataDir() { return ELLM_PDF_DATA_DIR; }

ExtractOptions TestOptions() {
  ExtractOptions options;
  options.extractor_path = ELLM_EXTRACTOR_PATH;
  options.wall_timeout = std::chrono::milliseconds(60'000);
  return options;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::vector<std::string> Tokens(const std::string& text) {
  std::vector<std::string> tokens;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) tokens.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    const std::string cp = text.substr(i, len);
    i += len;
    if (cp == " " || cp == "\n" || cp == "\t") {
      flush();
    } else if (text::IsCjk(text::FirstCodePoint(cp))) {
      flush();
      tokens.push_back(cp);
    } else {
      cur += cp;
    }
  }
  flush();
  return tokens;
}

double WordSimilarity(const std::string& expected, const std::string& actual) {
  const std::vector<std::string> a = Tokens(expected), b = Tokens(actual);
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  if (a.empty()) return b.empty() ? 1.0 : 0.0;
  return std::max(0.0, 1.0 - static_cast<double>(prev[b.size()]) / static_cast<double>(a.size()));
}

std::string AllText(const Document& doc) {
  std::string out;
  for (const Page& p : doc.pages) out += (out.empty() ? "" : "\n\n") + p.text;
  return out;
}

}  // namespace ellm::ingest::testing
