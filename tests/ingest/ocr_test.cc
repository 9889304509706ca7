// Issue 58: scanned pages are read by OCR (Tesseract) in the extractor
// child, through the real ellm-extract, on the scans of
// tests/data/pdf/make_scans.py: what was read how, per page; the text of a
// scan against the text of the page it was made from; OCR off, forced, a
// language that is not installed, and the limits.
#include <gtest/gtest.h>

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

StatusOr<Document> Extract(const std::string& name, OcrMode ocr = OcrMode::kAuto,
                           const std::string& languages = "eng") {
  ExtractOptions options = TestOptions();
  options.ocr = ocr;
  options.ocr_languages = languages;
  return ExtractDocument(PdfDataDir() + "/" + name, options);
}

TEST(Ocr, AScannedPdfIsReadAsItsTextWas) {
  StatusOr<Document> doc = Extract("scanned.pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ(doc->pages.size(), 2u);
  for (const Page& page : doc->pages) {
    EXPECT_EQ(page.read_by, "ocr");
    EXPECT_GE(page.ocr_confidence, 80) << page.text;
    EXPECT_EQ(page.ocr_note, "");
  }
  const double similarity =
      WordSimilarity(ReadText(PdfDataDir() + "/single_column.txt"), AllText(*doc));
  std::cout << "word similarity of the 200 dpi scan: " << similarity << "\n";
  EXPECT_GE(similarity, 0.97) << AllText(*doc);
  // The layout stages run on OCR'd words too: the title is a heading.
  ASSERT_FALSE(doc->headings.empty());
  EXPECT_EQ(doc->headings[0].title, "Annual Review of Operations");
}

TEST(Ocr, EachPageSaysHowItWasRead) {
  StatusOr<Document> doc = Extract("mixed_scan.pdf");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ(doc->pages.size(), 4u);
  // 1: a text layer, kept as it is.
  EXPECT_EQ(doc->pages[0].read_by, "text");
  EXPECT_NE(doc->pages[0].text.find("The board met in March"), std::string::npos);
  // 2: a scanned page among text pages.
  EXPECT_EQ(doc->pages[1].read_by, "ocr");
  EXPECT_NE(doc->pages[1].text.find("Looking ahead, management expects steady growth"),
            std::string::npos)
      << doc->pages[1].text;
  // 3 and 4: a blank scan and a photo with no writing: read, nothing found.
  for (int i : {2, 3}) {
    EXPECT_EQ(doc->pages[i].read_by, "ocr");
    EXPECT_EQ(doc->pages[i].text, "") << "page " << i + 1;
    EXPECT_EQ(doc->pages[i].ocr_note, "no text found") << "page " << i + 1;
  }
  // The JSON the child hands over, and `ellm extract --json` prints.
  StatusOr<Document> back = DocumentFromJson(ToJson(*doc));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pages[1].read_by, "ocr");
  EXPECT_EQ(back->pages[1].ocr_confidence, doc->pages[1].ocr_confidence);
  EXPECT_EQ(back->pages[2].ocr_note, "no text found");
}

TEST(Ocr, OffRefusesAScanNamingTheSetting) {
  StatusOr<Document> doc = Extract("scanned.pdf", OcrMode::kOff);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), ExtractError::kNoTextLayer);
  EXPECT_NE(doc.status().message().find("OCR is off (extract.ocr)"), std::string::npos)
      << doc.status().ToString();
  // Off leaves the scanned page of a mixed file empty, read as text.
  StatusOr<Document> mixed = Extract("mixed_scan.pdf", OcrMode::kOff);
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->pages[1].read_by, "text");
  EXPECT_EQ(mixed->pages[1].text, "");
}

TEST(Ocr, ForceReadsTextPagesByOcrToo) {
  StatusOr<Document> doc = Extract("single_column.pdf", OcrMode::kForce);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  for (const Page& page : doc->pages) EXPECT_EQ(page.read_by, "ocr");
  EXPECT_GE(WordSimilarity(ReadText(PdfDataDir() + "/single_column.txt"), AllText(*doc)), 0.97);
}

TEST(Ocr, AMissingLanguageNamesItsPackage) {
  StatusOr<Document> doc = Extract("scanned.pdf", OcrMode::kAuto, "eng+xyz");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), ExtractError::kUnreadable);
  EXPECT_NE(doc.status().message().find("tesseract-ocr-xyz"), std::string::npos)
      << doc.status().ToString();
  // A text PDF never loads the languages in auto mode.
  EXPECT_TRUE(Extract("single_column.pdf", OcrMode::kAuto, "xyz").ok());
}

// Issue 58 item 3: scans as image files, known by content: a two-page
// TIFF (as a fax or a document scanner writes), read page by page.
TEST(Ocr, AMultiPageTiffIsReadPageByPage) {
  StatusOr<Document> doc = Extract("fax.tif");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.media_type, "image/tiff");
  EXPECT_EQ(doc->metadata.page_count, 2);
  ASSERT_EQ(doc->pages.size(), 2u);
  for (const Page& page : doc->pages) {
    EXPECT_EQ(page.read_by, "ocr");
    EXPECT_GE(page.ocr_confidence, 80);
  }
  EXPECT_GE(WordSimilarity(ReadText(PdfDataDir() + "/single_column.txt"), AllText(*doc)), 0.97)
      << AllText(*doc);
  // Pages are marked for the model, as a PDF's are.
  EXPECT_NE(RenderForModel(*doc).find("[page 2]\nLooking ahead"), std::string::npos);
  StatusOr<Document> off = Extract("fax.tif", OcrMode::kOff);
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(ExtractErrorOf(off.status()), ExtractError::kNoTextLayer);
  EXPECT_NE(off.status().message().find("OCR is off"), std::string::npos);
}

// A hostile or broken image fails its document, with the limit or the
// damage named, before it is decoded where its header says enough.
TEST(Ocr, HostileImagesFailCleanly) {
  StatusOr<Document> bomb = Extract("bomb.png");
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(ExtractErrorOf(bomb.status()), ExtractError::kResourceLimit);
  EXPECT_NE(bomb.status().message().find("50000 x 50000 pixels, above the limit of 40 megapixels"),
            std::string::npos)
      << bomb.status().ToString();
  StatusOr<Document> truncated = Extract("truncated.tif");
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(ExtractErrorOf(truncated.status()), ExtractError::kDamaged);
  EXPECT_NE(truncated.status().message().find("truncated or corrupt"), std::string::npos)
      << truncated.status().ToString();
}

// A picture in a Word or OpenDocument file (a scanned page pasted in) is
// read where it stands, between the paragraphs around it; with OCR off it
// is left out.
class OfficePicture : public ::testing::TestWithParam<const char*> {};

TEST_P(OfficePicture, IsReadWhereItStands) {
  const std::string path = ::ellm::testing::SourceDir() + "/tests/data/office/" + GetParam();
  ExtractOptions options = TestOptions();
  StatusOr<Document> doc = ExtractDocument(path, options);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const std::string text = AllText(*doc);
  const size_t before = text.find("The signed page follows.");
  const size_t picture = text.find("Looking ahead, management expects steady growth");
  const size_t after = text.find("End of the document.");
  ASSERT_NE(picture, std::string::npos) << text;
  EXPECT_LT(before, picture);
  EXPECT_LT(picture, after);
  EXPECT_NE(text.find("No material weaknesses in internal control were identified."),
            std::string::npos)
      << text;
  options.ocr = OcrMode::kOff;
  doc = ExtractDocument(path, options);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(AllText(*doc).find("Looking ahead"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(WordAndOdt, OfficePicture, ::testing::Values("scan.docx", "scan.odt"));

TEST(Ocr, OptionsAreValidated) {
  ExtractOptions options = TestOptions();
  options.ocr_languages = "eng; rm -rf /";
  EXPECT_NE(options.Validate().message().find("ocr_languages"), std::string::npos);
  options = TestOptions();
  options.ocr_dpi = 5000;
  EXPECT_NE(options.Validate().message().find("ocr_dpi"), std::string::npos);
  EXPECT_EQ(ParseOcrMode("force"), OcrMode::kForce);
  EXPECT_EQ(ParseOcrMode("sometimes"), std::nullopt);
  EXPECT_EQ(OcrModeName(OcrMode::kOff), "off");
}

}  // namespace
}  // namespace ellm::ingest
