// Issue 37 item 8: the real ellm-extract child, made to misbehave after it
// entered its seccomp sandbox (ELLM_TEST_EXTRACTOR_MISBEHAVE), is killed and
// the document fails with extract.sandbox_violation; the PDF corpus itself
// extracts inside the sandbox (extract_pdf_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "ellm/ingest/extract.h"
#include "pdf_test_util.h"

namespace ellm::ingest {
namespace {

// Where the "write" misbehaviour tries to create a file (pdf/sandbox.cc).
constexpr char kEscapePath[] = "/tmp/ellm-extract-sandbox-escape";

StatusOr<Document> ExtractMisbehaving(const char* what, const char* file = "table.pdf",
                                      OcrMode ocr = OcrMode::kAuto) {
  setenv("ELLM_TEST_EXTRACTOR_MISBEHAVE", what, 1);
  ExtractOptions options = testing::TestOptions();
  options.ocr = ocr;
  StatusOr<Document> doc = ExtractDocument(testing::PdfDataDir() + "/" + file, options);
  unsetenv("ELLM_TEST_EXTRACTOR_MISBEHAVE");
  return doc;
}

void ExpectViolation(const StatusOr<Document>& doc, const std::string& file = "table.pdf") {
  ASSERT_FALSE(doc.ok()) << "the misbehaving extractor was not stopped";
  EXPECT_EQ(ExtractErrorOf(doc.status()), ExtractError::kSandboxViolation)
      << doc.status().ToString();
  EXPECT_EQ(doc.status().code(), StatusCode::kInternal);
  EXPECT_NE(
      doc.status().message().find(file + ": the document extractor made a forbidden system call"),
      std::string::npos)
      << doc.status().ToString();
}

TEST(ExtractorSandbox, KillsAChildThatOpensASocket) {
  ExpectViolation(ExtractMisbehaving("socket"));
}

TEST(ExtractorSandbox, KillsAChildThatOpensAFileForWriting) {
  std::filesystem::remove(kEscapePath);
  ExpectViolation(ExtractMisbehaving("write"));
  EXPECT_FALSE(std::filesystem::exists(kEscapePath));
}

TEST(ExtractorSandbox, KillsAChildThatStartsAProgram) {
  ExpectViolation(ExtractMisbehaving("exec"));
}

// Issue 53 item 5: read-only opens pass the seccomp filter, so Landlock
// keeps the child from reading anything but poppler's data, the time zone
// and the fonts; "read" aborts the child if /etc/passwd opens.
TEST(ExtractorSandbox, AChildCannotReadFilesBesideItsInput) {
  StatusOr<Document> doc = ExtractMisbehaving("read");
  ASSERT_TRUE(doc.ok()) << "the child read /etc/passwd: " << doc.status().ToString();
  EXPECT_EQ(doc->metadata.page_count, 1);
}

// Issue 53 item 5: the child inherited the parent's environment (API keys,
// broker credentials); "env" aborts the child on any variable beyond the
// sanitizers' options and its own test hook.
TEST(ExtractorSandbox, AChildGetsAnEmptyEnvironment) {
  setenv("ELLM_TEST_SECRET", "sk-do-not-pass", 1);
  StatusOr<Document> doc = ExtractMisbehaving("env");
  unsetenv("ELLM_TEST_SECRET");
  ASSERT_TRUE(doc.ok()) << "the child saw the parent's variables: " << doc.status().ToString();
}

// Issue 58: with Tesseract loaded and a page read by OCR (and poppler's
// renderer and fontconfig used for it), the sandbox still holds.
TEST(ExtractorSandbox, HoldsAfterOcrRead) {
  ExpectViolation(ExtractMisbehaving("late:socket", "scanned.pdf"), "scanned.pdf");
  std::filesystem::remove(kEscapePath);
  // Forced OCR renders a page whose fonts are not embedded (fontconfig).
  ExpectViolation(ExtractMisbehaving("late:write", "table.pdf", OcrMode::kForce));
  EXPECT_FALSE(std::filesystem::exists(kEscapePath));
  ExpectViolation(ExtractMisbehaving("late:socket", "fax.tif"), "fax.tif");
  StatusOr<Document> doc = ExtractMisbehaving("late:read", "scanned.pdf");
  ASSERT_TRUE(doc.ok()) << "the child read /etc/passwd: " << doc.status().ToString();
  EXPECT_EQ(doc->pages.at(0).read_by, "ocr");
}

TEST(ExtractorSandbox, AnUnknownMisbehaviourChangesNothing) {
  StatusOr<Document> doc = ExtractMisbehaving("nothing");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.page_count, 1);
}

}  // namespace
}  // namespace ellm::ingest
