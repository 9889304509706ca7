// PDF and text extraction end to end, through the real ellm-extract child,
// on the generated corpus in tests/data/pdf (make_pdfs.py): each case's
// text against its expected text, and every error kind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "ellm/ingest/extract.h"
#include "pdf_test_util.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

using testing::AllText;
using testing::PdfDataDir;
using testing::ReadText;
using testing::TestOptions;
using testing::WordSimilarity;
using testing::WriteBytes;

StatusOr<Document> Extract(const std::string& name, ExtractOptions options = TestOptions()) {
  return ExtractDocument(PdfDataDir() + "/" + name, options);
}

// Runs of whitespace -> one space, for substring checks across line breaks.
std::string Flat(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\n') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::string> Paragraphs(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(Flat(text.substr(start, end - start)));
    start = end + 2;
  }
  return out;
}

class PdfCase : public ::testing::TestWithParam<const char*> {};

TEST_P(PdfCase, MatchesExpectedTextAtLeast98Percent) {
  const std::string name = GetParam();
  auto doc = Extract(name + ".pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const std::string expected = ReadText(PdfDataDir() + "/" + name + ".txt");
  const double similarity = WordSimilarity(expected, AllText(*doc));
  std::cout << "word similarity " << name << ": " << similarity << "\n";
  RecordProperty("word_similarity", std::to_string(similarity));
  EXPECT_GE(similarity, 0.98) << AllText(*doc);
}

INSTANTIATE_TEST_SUITE_P(Corpus, PdfCase,
                         ::testing::Values("single_column", "two_column", "headers_footers",
                                           "hyphenated", "table", "chinese", "ligatures"));

TEST(ExtractPdf, ReadsColumnByColumn) {
  auto doc = Extract("two_column.pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const std::string text = Flat(AllText(*doc));
  size_t last_left = 0, first_right = std::string::npos;
  for (const std::string& p : Paragraphs(ReadText(PdfDataDir() + "/two_column.txt"))) {
    const size_t pos = text.find(p);
    ASSERT_NE(pos, std::string::npos) << "sentence split or lost: " << p << "\n" << text;
    if (p.rfind("Left", 0) == 0) last_left = std::max(last_left, pos);
    if (p.rfind("Right", 0) == 0) first_right = std::min(first_right, pos);
  }
  EXPECT_LT(last_left, first_right);
  // The footnote comes after the body and splits nothing.
  EXPECT_GT(text.find("1 Figures are unaudited"), text.find("Right three"));
}

TEST(ExtractPdf, RemovesRunningHeadersFootersAndPageNumbers) {
  auto doc = Extract("headers_footers.pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ(doc->pages.size(), 5u);
  for (const Page& page : doc->pages) {
    const std::string n = std::to_string(page.number);
    EXPECT_EQ(page.text.rfind("Section " + n + ".1.", 0), 0u) << page.text;
    for (const char* gone : {"Northwind", "Quarterly Review", "Q3 2024", "Confidential", "Page "}) {
      EXPECT_EQ(page.text.find(gone), std::string::npos) << gone << " in page " << n;
    }
  }
}

TEST(ExtractPdf, RepairsHyphenationAndKeepsRealHyphens) {
  auto doc = Extract("hyphenated.pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const std::string text = Flat(AllText(*doc));
  for (const char* word :
       {"its revenue from", "the operations team", "The investment in", "while management credited",
        "better profitability reporting", "The well-known retailer", "A self-assessment",
        "the state-of-the-art sorting", "for 2019-2023 and"}) {
    EXPECT_NE(text.find(word), std::string::npos) << word << "\n" << text;
  }
}

// Issue 55: a table reaches the model and the checks as a Markdown table,
// its first row the header, every cell in its column.
TEST(ExtractPdf, GivesATableAsAMarkdownTableWithItsHeaderRow) {
  auto doc = Extract("table.pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const std::string text = "\n" + AllText(*doc) + "\n";
  EXPECT_NE(text.find("\n\n| Item | 2022 | 2023 | Change |\n| --- | --- | --- | --- |\n"
                      "| Revenue | 1,204 | 1,388 | +15.3% |\n"),
            std::string::npos)
      << text;
  for (const char* row :
       {"| Cost of sales | 702 | 774 | +10.3% |", "| Net income | 148 | 213 | +43.9% |"}) {
    EXPECT_NE(text.find("\n" + std::string(row) + "\n"), std::string::npos) << row << text;
  }
}

TEST(ExtractPdf, NormalisesLigaturesAndKeepsChinese) {
  auto lig = Extract("ligatures.pdf");
  ASSERT_TRUE(lig.ok()) << lig.status().ToString();
  EXPECT_NE(AllText(*lig).find("financial office"), std::string::npos);
  EXPECT_EQ(AllText(*lig).find("\xEF\xAC"), std::string::npos);  // no U+FB0x left
  auto zh = Extract("chinese.pdf");
  ASSERT_TRUE(zh.ok()) << zh.status().ToString();
  EXPECT_EQ(zh->pages[0].text.rfind("\xE5\xB9\xB4\xE5\xBA\xA6\xE6\x8A\xA5\xE5\x91\x8A", 0), 0u);
}

TEST(ExtractPdf, FillsMetadata) {
  const std::string path = PdfDataDir() + "/single_column.pdf";
  auto doc = ExtractDocument(path, TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const DocumentMetadata& m = doc->metadata;
  EXPECT_EQ(m.source, path);
  EXPECT_EQ(m.media_type, "application/pdf");
  EXPECT_EQ(m.title, "Single Column");
  EXPECT_EQ(m.author, "ellm tests");
  EXPECT_NE(m.producer.find("ReportLab"), std::string::npos);
  EXPECT_EQ(m.page_count, 2);
  EXPECT_EQ(m.byte_size, static_cast<int64_t>(std::filesystem::file_size(path)));
  EXPECT_EQ(m.sha256.size(), 64u);
  ASSERT_EQ(doc->pages.size(), 2u);
  EXPECT_EQ(doc->pages[1].number, 2);
  EXPECT_EQ(RenderForModel(*doc).rfind("[page 1]\nAnnual Review of Operations\n", 0), 0u);
}

void ExpectError(const StatusOr<Document>& doc, ExtractError kind, const std::string& needle) {
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), kind) << doc.status().ToString();
  EXPECT_NE(doc.status().message().find(needle), std::string::npos) << doc.status().ToString();
}

TEST(ExtractPdf, ReportsEachFailureKind) {
  ExpectError(Extract("encrypted.pdf"), ExtractError::kEncrypted, "password");
  ExpectError(Extract("truncated.pdf"), ExtractError::kDamaged, "truncated.pdf: damaged");
  // The content decides: a PNG named .pdf is read as an image (issue 58),
  // by OCR, which finds no words in a red square.
  ExpectError(Extract("not_a_pdf.pdf"), ExtractError::kNoTextLayer, "OCR read no words");
  const std::string gif = ::testing::TempDir() + "/ellm-not-a-pdf.pdf";
  WriteBytes(gif, std::string("GIF89a\x10\0\x10\0", 10));
  ExpectError(ExtractDocument(gif, TestOptions()), ExtractError::kNotPdf, "GIF image");
  ExpectError(Extract("image_only.pdf"), ExtractError::kNoTextLayer, "2 pages");
  ExpectError(Extract("missing.pdf"), ExtractError::kNotFound, "missing.pdf: no such file");
  ExpectError(ExtractDocument(PdfDataDir(), TestOptions()), ExtractError::kUnreadable, "directory");
  ExtractOptions few_pages = TestOptions();
  few_pages.max_pages = 3;
  ExpectError(Extract("headers_footers.pdf", few_pages), ExtractError::kTooManyPages,
              "5 pages, above the limit of 3");
  ExtractOptions small = TestOptions();
  small.max_bytes = 1000;
  ExpectError(Extract("single_column.pdf", small), ExtractError::kTooLarge, "above the limit");
}

class TextFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ellm::testing::MakeTempDir("ellm-extract-test"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TextFiles, PassPlainTextAndMarkdownThrough) {
  WriteBytes(dir_ + "/notes.txt", "\xEF\xBB\xBFline one\r\nline two\r\n");
  auto txt = ExtractDocument(dir_ + "/notes.txt", TestOptions());
  ASSERT_TRUE(txt.ok()) << txt.status().ToString();
  EXPECT_EQ(txt->metadata.media_type, "text/plain");
  EXPECT_EQ(RenderForModel(*txt), "line one\nline two\n");
  WriteBytes(dir_ + "/abc.md", "abc");
  auto md = ExtractDocument(dir_ + "/abc.md", TestOptions());
  ASSERT_TRUE(md.ok()) << md.status().ToString();
  EXPECT_EQ(md->metadata.media_type, "text/markdown");
  EXPECT_EQ(md->metadata.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(md->metadata.byte_size, 3);
}

TEST_F(TextFiles, RejectsEverythingElseClearly) {
  WriteBytes(dir_ + "/photo.gif", std::string("GIF89a\x10\0\x10\0", 10));
  ExpectError(ExtractDocument(dir_ + "/photo.gif", TestOptions()), ExtractError::kUnsupportedType,
              "unsupported file type '.gif' (it is a GIF image)");
  // A PNG is read as a scan (issue 58); its signature alone is a damaged one.
  WriteBytes(dir_ + "/photo.png", std::string("\x89PNG\r\n\x1a\n", 8));
  ExpectError(ExtractDocument(dir_ + "/photo.png", TestOptions()), ExtractError::kDamaged,
              "photo.png: the image's header cannot be read");
  WriteBytes(dir_ + "/report.docx", std::string("PK\x03\x04rest", 8));
  ExpectError(ExtractDocument(dir_ + "/report.docx", TestOptions()), ExtractError::kDamaged,
              "not a readable ZIP archive");
  WriteBytes(dir_ + "/latin1.txt", "caf\xE9");
  ExpectError(ExtractDocument(dir_ + "/latin1.txt", TestOptions()), ExtractError::kUnsupportedType,
              "not UTF-8");
  WriteBytes(dir_ + "/empty.pdf", "");
  ExpectError(ExtractDocument(dir_ + "/empty.pdf", TestOptions()), ExtractError::kNotPdf, "empty");
  if (geteuid() != 0) {  // root reads anything
    WriteBytes(dir_ + "/secret.txt", "x");
    chmod((dir_ + "/secret.txt").c_str(), 0);
    ExpectError(ExtractDocument(dir_ + "/secret.txt", TestOptions()), ExtractError::kUnreadable,
                "Permission denied");
  }
}

TEST_F(TextFiles, NeverModifiesOrMovesTheInput) {
  const std::string path = dir_ + "/report.pdf";
  std::filesystem::copy_file(PdfDataDir() + "/two_column.pdf", path);
  const std::string before = ReadText(path);
  struct stat st_before {};
  ASSERT_EQ(stat(path.c_str(), &st_before), 0);
  auto doc = ExtractDocument(path, TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  struct stat st_after {};
  ASSERT_EQ(stat(path.c_str(), &st_after), 0);
  EXPECT_EQ(ReadText(path), before);
  EXPECT_EQ(st_after.st_mtim.tv_sec, st_before.st_mtim.tv_sec);
  EXPECT_EQ(st_after.st_mtim.tv_nsec, st_before.st_mtim.tv_nsec);
  EXPECT_EQ(st_after.st_ino, st_before.st_ino);
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) entries += e.exists();
  EXPECT_EQ(entries, 1u);  // nothing written next to it
}

}  // namespace
}  // namespace ellm::ingest
