// One contract, four files: the hand-drafted contract texts in
// tests/data/contracts/<pair>/{a,b}.txt are written as HTML here, and
// LibreOffice (headless, from Debian) turns them into .docx, .odt and PDF.
// Each file, extracted by the real ellm-extract child, must split into the
// same clauses (number, heading, text) as the text itself, and the Word and
// OpenDocument files must give their headings as the heading tree.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ellm/ingest/extract.h"
#include "ellm/pipelines/contracts.h"
#include "test_env.h"

namespace ellm {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

// The first line of a block is a heading when it is numbered the way the
// contracts number clauses, or is written in capitals.
bool IsHeading(const std::string& line) {
  if (line.empty() || line.size() > 80) return false;
  if (std::isdigit(static_cast<unsigned char>(line[0])) && line.find(". ") != std::string::npos &&
      line.find(". ") < 4) {
    return true;
  }
  if (line.rfind("Clause ", 0) == 0 || line.rfind("ARTICLE ", 0) == 0) return true;
  for (char c : line) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Blank-line separated blocks; a heading line becomes <h2> (the first block's
// <h1>), everything else one <p> per block.
std::string ContractHtml(const std::string& text) {
  std::string html = "<html><head><meta charset=\"utf-8\"></head><body>\n";
  std::istringstream in(text);
  std::string line, block;
  bool first = true;
  auto flush = [&] {
    if (block.empty()) return;
    const size_t nl = block.find('\n');
    const std::string head = block.substr(0, nl);
    std::string rest = nl == std::string::npos ? "" : block.substr(nl + 1);
    if (IsHeading(head)) {
      html += (first ? "<h1>" : "<h2>") + Escape(head) + (first ? "</h1>\n" : "</h2>\n");
    } else {
      rest = block;
    }
    for (char& c : rest) c = c == '\n' ? ' ' : c;
    if (!rest.empty()) html += "<p>" + Escape(rest) + "</p>\n";
    block.clear();
    first = false;
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      flush();
    } else {
      block += (block.empty() ? "" : "\n") + line;
    }
  }
  flush();
  return html + "</body></html>\n";
}

std::string Soffice() {
  for (const char* p : {"/usr/bin/soffice", "/usr/bin/libreoffice"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

// soffice --convert-to `to` for every file in `inputs`, into `dir`.
void Convert(const std::string& soffice, const std::string& dir, const std::string& to,
             const std::string& infilter, const std::vector<std::string>& inputs) {
  std::string cmd = "'" + soffice + "' --headless --norestore -env:UserInstallation=file://" + dir +
                    "/profile " + infilter + " --convert-to '" + to + "' --outdir '" + dir + "'";
  for (const std::string& in : inputs) cmd += " '" + in + "'";
  cmd += " > '" + dir + "/soffice.log' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << ReadFile(dir + "/soffice.log");
}

std::string Flat(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\n') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> ClauseRows(const std::vector<pipelines::Page>& pages) {
  std::vector<std::string> rows;
  for (const pipelines::Clause& c : pipelines::SplitClauses(pages)) {
    rows.push_back(std::string(pipelines::ClauseKindName(c.kind)) + " [" + c.number + "] [" +
                   c.heading + "] " + Flat(c.text));
  }
  return rows;
}

std::vector<pipelines::Page> PagesOf(const ingest::Document& doc) {
  std::vector<pipelines::Page> pages;
  for (const ingest::Page& p : doc.pages) pages.push_back({p.number, p.text});
  return pages;
}

TEST(OfficeFormats, SameContractAsDocxOdtAndPdfGivesTheSameClauses) {
  const std::string soffice = Soffice();
  ELLM_REQUIRE_OR_SKIP_(!soffice.empty(), "LibreOffice (scripts/bootstrap installs it)");
  const std::string dir = ::ellm::testing::MakeTempDir("ellm-office-formats");
  const std::string data = ::ellm::testing::SourceDir() + "/tests/data/contracts/";
  std::vector<std::string> names, html;
  for (const char* pair : {"services", "nda", "lease"}) {
    for (const char* side : {"a", "b"}) {
      const std::string name = std::string(pair) + "-" + side;
      std::ofstream(dir + "/" + name + ".html")
          << ContractHtml(ReadFile(data + pair + "/" + side + ".txt"));
      names.push_back(name);
      html.push_back(dir + "/" + name + ".html");
    }
  }
  const std::string writer = "--infilter='HTML (StarWriter)'";
  ASSERT_NO_FATAL_FAILURE(Convert(soffice, dir, "docx:MS Word 2007 XML", writer, html));
  ASSERT_NO_FATAL_FAILURE(Convert(soffice, dir, "odt", writer, html));
  std::vector<std::string> odts;
  for (const std::string& n : names) odts.push_back(dir + "/" + n + ".odt");
  ASSERT_NO_FATAL_FAILURE(Convert(soffice, dir, "pdf", "", odts));

  ingest::ExtractOptions options;
  options.extractor_path = ELLM_EXTRACTOR_PATH;
  size_t i = 0;
  for (const char* pair : {"services", "nda", "lease"}) {
    for (const char* side : {"a", "b"}) {
      const std::string& name = names[i++];
      SCOPED_TRACE(name);
      const std::vector<std::string> expected =
          ClauseRows({{1, ReadFile(data + pair + "/" + side + ".txt")}});
      ASSERT_GE(expected.size(), 6u);
      for (const char* ext : {".docx", ".odt", ".pdf"}) {
        SCOPED_TRACE(ext);
        auto doc = ingest::ExtractDocument(dir + "/" + name + ext, options);
        ASSERT_TRUE(doc.ok()) << doc.status().ToString();
        EXPECT_EQ(ClauseRows(PagesOf(*doc)), expected);
        {
          // Every clause heading (an <h2>) is in the heading tree, at level 2:
          // from the heading styles, or from the PDF's bookmarks.
          std::vector<std::string> want, got;
          for (const pipelines::Clause& c :
               pipelines::SplitClauses({{1, ReadFile(data + pair + "/" + side + ".txt")}})) {
            if (!c.heading.empty() && c.kind != pipelines::ClauseKind::kPreamble) {
              want.push_back(c.heading);
            }
          }
          for (const ingest::Heading& h : doc->headings) {
            if (h.level == 2) got.push_back(h.title);
          }
          EXPECT_EQ(got, want);
        }
      }
    }
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Non-empty lines, trimmed, without a byte order mark.
std::vector<std::string> Lines(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    out.push_back(line.substr(a, line.find_last_not_of(" \t\r") - a + 1));
  }
  return out;
}

// List numbers are not in a Word or ODT file's text: the reader computes
// them from the list styles. LibreOffice's own plain-text export of the same
// file is the reference for what a reader sees.
TEST(OfficeFormats, ListNumbersMatchLibreOfficesOwnText) {
  const std::string soffice = Soffice();
  ELLM_REQUIRE_OR_SKIP_(!soffice.empty(), "LibreOffice (scripts/bootstrap installs it)");
  const std::string dir = ::ellm::testing::MakeTempDir("ellm-office-lists");
  std::ofstream(dir + "/lists.html")
      << "<html><body><h1>Master Agreement</h1><ol><li><p>Definitions apply.</p>"
         "<ol type=\"a\"><li><p>First sub.</p></li><li><p>Second sub.</p></li></ol></li>"
         "<li><p>Payment is due.</p></li><li><p>Term ends.</p></li></ol><p>Between lists.</p>"
         "<ol start=\"4\"><li><p>Fourth item.</p></li></ol><ol type=\"I\"><li><p>Roman one."
         "</p></li><li><p>Roman two.</p></li></ol><ol type=\"i\" start=\"8\"><li><p>viii."
         "</p></li><li><p>ix.</p></li></ol></body></html>\n";
  const std::string writer = "--infilter='HTML (StarWriter)'";
  ASSERT_NO_FATAL_FAILURE(
      Convert(soffice, dir, "docx:MS Word 2007 XML", writer, {dir + "/lists.html"}));
  ASSERT_NO_FATAL_FAILURE(Convert(soffice, dir, "odt", writer, {dir + "/lists.html"}));
  ingest::ExtractOptions options;
  options.extractor_path = ELLM_EXTRACTOR_PATH;
  for (const char* ext : {".docx", ".odt"}) {
    SCOPED_TRACE(ext);
    const std::string file = dir + "/lists" + ext;
    const std::string sub = dir + std::string("/txt") + ext;
    fs::create_directories(sub);
    ASSERT_NO_FATAL_FAILURE(Convert(soffice, sub, "txt:Text (encoded):UTF8", "", {file}));
    const std::vector<std::string> want = Lines(ReadFile(sub + "/lists.txt"));
    ASSERT_GE(want.size(), 10u);
    EXPECT_EQ(want[1], "1. Definitions apply.");  // the reference numbers lists
    auto doc = ingest::ExtractDocument(file, options);
    ASSERT_TRUE(doc.ok()) << doc.status().ToString();
    EXPECT_EQ(Lines(ingest::RenderForModel(*doc)), want);
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm
