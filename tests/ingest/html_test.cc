// Issue 55 item 3: web pages in, through the real ellm-extract child (the
// content decides), on tests/data/html: the heading tree, tables as
// Markdown, lists, and what a reader never sees left out; a real DocBook
// page; broken, deep and empty markup; and the html fuzz corpus replayed
// in this process with the promises tests/fuzz/html_fuzz.cc checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "office/html.h"
#include "pdf_test_util.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

namespace fs = std::filesystem;
using testing::AllText;
using testing::TestOptions;
using testing::WriteBytes;

std::string HtmlDir() { return ::ellm::testing::SourceDir() + "/tests/data/html"; }

TEST(Html, APageIsItsHeadingsParagraphsTablesAndLists) {
  StatusOr<Document> doc = ExtractDocument(HtmlDir() + "/report.html", TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.media_type, "text/html");
  EXPECT_EQ(doc->metadata.title, "Quarterly Report");
  ASSERT_EQ(doc->headings.size(), 2u);
  EXPECT_EQ(doc->headings[1].level, 2);
  EXPECT_EQ(doc->headings[1].number, "1.1");
  EXPECT_EQ(doc->headings[1].title, "Figures");
  const std::string text = AllText(*doc);
  // Inline markup and source line breaks inside one paragraph.
  EXPECT_NE(text.find("Revenue grew by 12% in the quarter, led by exports."), std::string::npos)
      << text;
  EXPECT_NE(text.find("| Region | 2024 | 2025 |\n| --- | --- | --- |\n| North | 1,204 | 1,388 |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1. First risk\n\n2. Second risk"), std::string::npos) << text;
  EXPECT_NE(text.find("- A bullet"), std::string::npos) << text;
  EXPECT_NE(text.find("Closing words\n\nnested block"), std::string::npos) << text;
  for (const char* unseen : {"secret", "color:red", "Home | About", "Hidden text"}) {
    EXPECT_EQ(text.find(unseen), std::string::npos) << unseen << " in:\n" << text;
  }
}

TEST(Html, ARealDocBookPage) {
  StatusOr<Document> doc = ExtractDocument(HtmlDir() + "/users-and-groups.html", TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.title, "Users and Groups in the Debian System");
  std::vector<std::string> titles;
  for (const Heading& h : doc->headings) titles.push_back(h.title);
  EXPECT_NE(std::find(titles.begin(), titles.end(), "Introduction"), titles.end());
  EXPECT_NE(std::find(titles.begin(), titles.end(), "Users and Groups"), titles.end());
  EXPECT_NE(AllText(*doc).find("The update-passwd tool keeps the entries in these master files"),
            std::string::npos);
}

TEST(Html, TheContentDecidesAndBrokenMarkupIsRead) {
  const std::string dir = ::testing::TempDir();
  // HTML named .txt is a web page; text named .html is read as a page too.
  WriteBytes(dir + "/page.txt", "<!-- saved -->\n<HTML><body><h1>Title</h1><p>Body text.</body>");
  StatusOr<Document> doc = ExtractDocument(dir + "/page.txt", TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.media_type, "text/html");
  EXPECT_EQ(AllText(*doc), "Title\n\nBody text.\n");
  WriteBytes(dir + "/broken.html", "<p>unclosed <b>bold <table><tr><td>a<td>b<tr><td>c</table>");
  doc = ExtractDocument(dir + "/broken.html", TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_NE(AllText(*doc).find("| a | b |"), std::string::npos) << AllText(*doc);
  WriteBytes(dir + "/empty.html", "<!DOCTYPE html><html><body><script>x()</script></body></html>");
  doc = ExtractDocument(dir + "/empty.html", TestOptions());
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), ExtractError::kNoTextLayer);
  // 200,000 nested elements: read to the depth bound, no crash, no hang.
  std::string deep = "<html><body>";
  for (int i = 0; i < 200000; ++i) deep += "<div>";
  deep += "deep</body></html>";
  WriteBytes(dir + "/deep.html", deep);
  doc = ExtractDocument(dir + "/deep.html", TestOptions());
  EXPECT_TRUE(doc.ok() || ExtractErrorOf(doc.status()).has_value()) << doc.status().ToString();
}

TEST(HtmlCorpus, EveryFileIsADocumentOrAnExtractError) {
  const fs::path dir = fs::path(::ellm::testing::SourceDir()) / "tests/ingest/html_corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 7u) << "seeds missing in " << dir;
  int documents = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const StatusOr<Document> doc = office::HtmlToDocument(bytes, path.filename().string());
    if (!doc.ok()) {
      EXPECT_TRUE(ExtractErrorOf(doc.status()).has_value()) << doc.status().ToString();
      continue;
    }
    ++documents;
    EXPECT_TRUE(DocumentFromJson(ToJson(*doc)).ok());
  }
  EXPECT_GE(documents, 5);
}

}  // namespace
}  // namespace ellm::ingest
