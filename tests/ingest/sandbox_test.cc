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

StatusOr<Document> ExtractMisbehaving(const char* what) {
  setenv("ELLM_TEST_EXTRACTOR_MISBEHAVE", what, 1);
  StatusOr<Document> doc =
      ExtractDocument(testing::PdfDataDir() + "/table.pdf", testing::TestOptions());
  unsetenv("ELLM_TEST_EXTRACTOR_MISBEHAVE");
  return doc;
}

void ExpectViolation(const StatusOr<Document>& doc) {
  ASSERT_FALSE(doc.ok()) << "the misbehaving extractor was not stopped";
  EXPECT_EQ(ExtractErrorOf(doc.status()), ExtractError::kSandboxViolation)
      << doc.status().ToString();
  EXPECT_EQ(doc.status().code(), StatusCode::kInternal);
  EXPECT_NE(
      doc.status().message().find("table.pdf: the document extractor made a forbidden system call"),
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

TEST(ExtractorSandbox, AnUnknownMisbehaviourChangesNothing) {
  StatusOr<Document> doc = ExtractMisbehaving("nothing");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata.page_count, 1);
}

}  // namespace
}  // namespace ellm::ingest
