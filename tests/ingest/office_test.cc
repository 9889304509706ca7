// Word and OpenDocument extraction through the real ellm-extract child: the
// hand-written Word fixture (tests/data/office/make_fixtures.py) with
// numbering, tracked changes, a comment, a table and a page break; an
// encrypted and a truncated one; and hostile archives built here (a ZIP
// bomb, XML nested 200,000 deep, a spreadsheet, an encrypted ODT).
#include <gtest/gtest.h>
#include <zip.h>

#include <string>
#include <utility>
#include <vector>

#include "ellm/ingest/extract.h"
#include "pdf_test_util.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

using testing::TestOptions;

std::string Fixture(const std::string& name) {
  return ::ellm::testing::SourceDir() + "/tests/data/office/" + name;
}

// A ZIP archive at `path` holding `parts` (name, bytes), deflated.
void WriteZip(const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& parts) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(z, nullptr) << "zip_open " << error;
  for (const auto& [name, data] : parts) {
    zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
    ASSERT_GE(zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE), 0) << zip_strerror(z);
  }
  ASSERT_EQ(zip_close(z), 0);
}

void ExpectError(const StatusOr<Document>& doc, ExtractError kind, const std::string& needle) {
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), kind) << doc.status().ToString();
  EXPECT_NE(doc.status().message().find(needle), std::string::npos) << doc.status().ToString();
}

const char* kWordBody =
    "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
    "<w:body>";

TEST(WordFiles, AcceptTrackedChangesDropCommentsAndNumberClauses) {
  auto doc = ExtractDocument(Fixture("tracked.docx"), TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.media_type, kMediaTypeDocx);
  EXPECT_EQ(doc->metadata.title, "Consulting Agreement");
  EXPECT_EQ(doc->metadata.author, "Legal Team");
  ASSERT_EQ(doc->pages.size(), 2u);  // the explicit page break
  EXPECT_EQ(doc->metadata.page_count, 2);
  const std::string& one = doc->pages[0].text;
  // Numbers from numbering.xml, which the text itself does not hold.
  EXPECT_NE(one.find("\n1. Services\n"), std::string::npos) << one;
  EXPECT_NE(one.find("(a) The Consultant shall deliver a data audit."), std::string::npos) << one;
  EXPECT_NE(one.find("(b) The Consultant shall train"), std::string::npos) << one;
  // The insertion accepted, the deletion and the comment gone.
  EXPECT_NE(one.find("The Client shall pay EUR 9,500 per month."), std::string::npos) << one;
  EXPECT_EQ(one.find("9,000"), std::string::npos);
  EXPECT_EQ(one.find("finance"), std::string::npos);
  EXPECT_NE(one.find("| Milestone | Due |\n| --- | --- |\n| Audit report | 30 June 2026 |"),
            std::string::npos)
      << one;
  EXPECT_EQ(doc->pages[1].text, "3. Term\n\nThis agreement ends on 31 December 2026.\n");
  ASSERT_EQ(doc->headings.size(), 3u);
  EXPECT_EQ(doc->headings[0].number, "1");
  EXPECT_EQ(doc->headings[0].title, "Services");
  EXPECT_EQ(doc->headings[2].title, "Term");
  EXPECT_EQ(doc->headings[2].page, 2);
  EXPECT_NE(RenderForModel(*doc).find("\n[page 2]\n3. Term\n"), std::string::npos);
}

TEST(WordFiles, EncryptedCorruptAndOldFilesGetTheirOwnErrors) {
  ExpectError(ExtractDocument(Fixture("encrypted.docx"), TestOptions()), ExtractError::kEncrypted,
              "password-protected");
  ExpectError(ExtractDocument(Fixture("corrupt.docx"), TestOptions()), ExtractError::kDamaged,
              "corrupt.docx: not a readable ZIP archive");
  const std::string dir = ::ellm::testing::MakeTempDir("ellm-office");
  // An OLE compound file without an encrypted package: a Word 97-2003 file.
  testing::WriteBytes(dir + "/old.doc",
                      std::string("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 8) + std::string(600, '\0'));
  ExpectError(ExtractDocument(dir + "/old.doc", TestOptions()), ExtractError::kUnsupportedType,
              "Word 97-2003");
  WriteZip(dir + "/sheet.xlsx", {{"xl/workbook.xml", "<workbook/>"}});
  ExpectError(ExtractDocument(dir + "/sheet.xlsx", TestOptions()), ExtractError::kUnsupportedType,
              "an Excel workbook");
  WriteZip(dir + "/locked.odt",
           {{"mimetype", std::string(kMediaTypeOdt)},
            {"META-INF/manifest.xml",
             "<manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:"
             "manifest:1.0\"><manifest:file-entry manifest:full-path=\"content.xml\">"
             "<manifest:encryption-data/></manifest:file-entry></manifest:manifest>"},
            {"content.xml", "garbage"}});
  ExpectError(ExtractDocument(dir + "/locked.odt", TestOptions()), ExtractError::kEncrypted,
              "password-protected");
  WriteZip(dir + "/broken.docx", {{"word/document.xml", std::string(kWordBody) + "<w:p>"}});
  ExpectError(ExtractDocument(dir + "/broken.docx", TestOptions()), ExtractError::kDamaged,
              "word/document.xml is not well-formed XML");
}

TEST(WordFiles, HostileArchivesAreBoundedNotFollowed) {
  const std::string dir = ::ellm::testing::MakeTempDir("ellm-office");
  // 65 MiB of XML that deflates to a few dozen KiB: refused, not expanded.
  std::string bomb = std::string(kWordBody) + std::string(size_t{65} << 20, ' ');
  WriteZip(dir + "/bomb.docx", {{"word/document.xml", bomb}});
  bomb.clear();
  ExpectError(ExtractDocument(dir + "/bomb.docx", TestOptions()), ExtractError::kResourceLimit,
              "expands beyond 64 MiB");
  // 200,000 nested content controls: an error, not a stack overflow.
  std::string deep = kWordBody;
  for (int i = 0; i < 200'000; ++i) deep += "<w:sdt>";
  WriteZip(dir + "/deep.docx", {{"word/document.xml", deep + "</w:body></w:document>"}});
  auto doc = ExtractDocument(dir + "/deep.docx", TestOptions());
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), ExtractError::kDamaged) << doc.status().ToString();
  // Well-formed, deeply nested: the walk stops at its depth limit.
  deep = kWordBody;
  for (int i = 0; i < 20'000; ++i) deep += "<w:sdt>";
  for (int i = 0; i < 20'000; ++i) deep += "</w:sdt>";
  WriteZip(dir + "/deep2.docx", {{"word/document.xml", deep + "</w:body></w:document>"}});
  ExpectError(ExtractDocument(dir + "/deep2.docx", TestOptions()), ExtractError::kDamaged,
              "nested more than");
  // No text at all.
  WriteZip(dir + "/empty.docx",
           {{"word/document.xml", std::string(kWordBody) + "</w:body></w:document>"}});
  ExpectError(ExtractDocument(dir + "/empty.docx", TestOptions()), ExtractError::kNoTextLayer,
              "holds no text");
}

}  // namespace
}  // namespace ellm::ingest
