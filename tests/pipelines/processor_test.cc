// Which failures are transient (the job runs again) and which permanent
// (failed and dead-lettered at once): IsTransient and
// PipelineResult::FailedWith, and a failed fork of the PDF extractor as the
// `document-stats` processor reports it; a path document is opened beneath
// its allowed root.
#include "ellm/pipelines/processor.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "ellm/ingest/extract.h"
#include "ellm/ingest/job_message.h"
#include "test_env.h"

namespace ellm::pipelines {
namespace {

TEST(IsTransient, TheMachineOrAPeerFallingShortIsTransient) {
  EXPECT_TRUE(IsTransient(ErrnoError(ENOSPC, "spilling 4096 bytes of KV cache")));
  EXPECT_TRUE(IsTransient(ErrnoError(ENOMEM, "out of memory")));
  EXPECT_TRUE(IsTransient(ErrnoError(EMFILE, "pipe")));
  EXPECT_TRUE(IsTransient(ErrnoError(EAGAIN, "fork of the extractor")));
  EXPECT_TRUE(IsTransient(UnavailableError("broker away")));
  EXPECT_TRUE(IsTransient(DeadlineExceededError("broker timed out")));
}

TEST(IsTransient, TheInputAndTheDocumentsOwnLimitsArePermanent) {
  EXPECT_FALSE(IsTransient(InvalidArgumentError("bad")));
  EXPECT_FALSE(IsTransient(OutOfRangeError("the prompt has 40000 tokens")));
  EXPECT_FALSE(IsTransient(FailedPreconditionError("no text layer")));
  EXPECT_FALSE(IsTransient(InternalError("crashed")));
  // Same codes as transient ones, but the document's own: permanent.
  EXPECT_FALSE(IsTransient(
      ingest::MakeExtractError(ingest::ExtractError::kResourceLimit, "a.pdf: memory limit")));
  EXPECT_FALSE(
      IsTransient(ingest::MakeExtractError(ingest::ExtractError::kTimeout, "a.pdf: 180 s")));
}

TEST(PipelineResult, FailedWithNamesATransientFailureAfterItsCode) {
  PipelineResult spill = PipelineResult::FailedWith("engine_error", "RESOURCE_EXHAUSTED: disk full",
                                                    ErrnoError(ENOSPC, "spilling"));
  EXPECT_TRUE(spill.transient);
  EXPECT_EQ(spill.error_code, "resource_exhausted");
  EXPECT_EQ(spill.error, "RESOURCE_EXHAUSTED: disk full");

  PipelineResult bad = PipelineResult::FailedWith(
      "document.encrypted", "a.pdf is encrypted",
      ingest::MakeExtractError(ingest::ExtractError::kEncrypted, "a.pdf is encrypted"));
  EXPECT_FALSE(bad.transient);
  EXPECT_EQ(bad.error_code, "document.encrypted");
}

// A document-stats job over one of tests/data/pdf, read by the real extractor.
PipelineRequest StatsJob(const std::string& pdf) {
  PipelineRequest request;
  request.job_id = "j1";
  request.documents.resize(1);
  request.documents[0].path = std::string(ELLM_PDF_DATA_DIR) + "/" + pdf;
  request.documents[0].resolved_path = request.documents[0].path;
  return request;
}

std::unique_ptr<Processor> StatsProcessor() {
  ingest::ExtractOptions options;
  options.extractor_path = ELLM_EXTRACTOR_PATH;
  return MakeDocumentStatsProcessor(options);
}

TEST(DocumentStats, AFailedForkOfTheExtractorIsTransient) {
  auto processor = StatsProcessor();
  const PipelineRequest request = StatsJob("ligatures.pdf");
  std::atomic<bool> cancel{false};

  ingest::FailExtractorForksForTesting(1);
  PipelineResult failed = processor->Run(request, cancel);
  EXPECT_TRUE(failed.transient);
  EXPECT_EQ(failed.error_code, "unavailable");
  EXPECT_NE(failed.error.find("fork of the extractor"), std::string::npos) << failed.error;

  PipelineResult second = processor->Run(request, cancel);  // the next fork works
  EXPECT_TRUE(second.output.has_value()) << second.error_code << ": " << second.error;
}

// Issue 58: a job over a partly scanned PDF knows which pages OCR read,
// through the real extractor (tests/data/pdf/make_scans.py).
TEST(DocumentStats, KnowsWhichPagesWereReadByOcr) {
  std::atomic<bool> cancel{false};
  PipelineResult r = StatsProcessor()->Run(StatsJob("mixed_scan.pdf"), cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::vector<OcrPageSummary>& pages = r.output->documents.at(0).ocr_pages;
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].page, 2);
  EXPECT_GE(pages[0].confidence, 80);
  EXPECT_EQ(pages[0].note, "");
  EXPECT_EQ(pages[1].note, "no text found");
}

TEST(NoteOcrPages, NamesThePagesOcrReadBadlyInTheTextAndTheJson) {
  PipelineOutput out;
  out.output_text = "## Purpose\nA summary.";
  out.output_json = R"({"sections":[]})";
  out.documents.push_back({0, "scan.pdf", "ee", 9, 100, {}});
  out.documents[0].ocr_pages = {{2, 95, ""},
                                {3, 40, "low confidence"},
                                {5, 50, "low confidence"},
                                {7, 0, "no text found"},
                                {9, 20, "stopped at the 60 s page limit"}};
  out.documents.push_back({1, "clean.pdf", "dd", 2, 100, {}});
  out.documents[1].ocr_pages = {{1, 97, ""}};
  NoteOcrPages(&out);
  const std::string note =
      "Note (scan.pdf): OCR read pages 3 and 5 with low confidence (mean 45%), found no text on "
      "page 7 (blank or pictures) and stopped at its time limit on page 9. What these scanned "
      "pages say may be missing or misread here.";
  EXPECT_EQ(out.output_text, "## Purpose\nA summary.\n\n" + note);
  EXPECT_EQ(*out.output_json, R"({"sections":[],"warnings":[")" + note + R"("]})");
  // Pages OCR read well add nothing.
  PipelineOutput clean;
  clean.output_text = "text";
  clean.documents.push_back({0, "clean.pdf", "dd", 2, 100, {{1, 97, ""}}});
  NoteOcrPages(&clean);
  EXPECT_EQ(clean.output_text, "text");
}

// Issue 37 item 8: a document checked when its message was parsed, then
// swapped (itself, or a directory on its path) for a symlink leading out of
// the allowed root, is not read: it is opened beneath the root with
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS).
TEST(LoadJobDocument, RefusesASymlinkSwappedInAfterTheMessageWasChecked) {
  namespace fs = std::filesystem;
  const std::string dir = ellm::testing::MakeTempDir("ellm-beneath");
  const std::string inbox = dir + "/inbox", outside = dir + "/outside";
  fs::create_directories(inbox + "/sub");
  fs::create_directories(outside + "/sub");
  std::ofstream(inbox + "/report.txt") << "public";
  std::ofstream(inbox + "/sub/report.txt") << "public";
  std::ofstream(outside + "/secret.txt") << "secret";
  std::ofstream(outside + "/sub/report.txt") << "secret";
  ingest::JobMessageLimits limits;
  limits.pipelines = {"document-stats"};
  limits.allowed_roots = {inbox};
  ingest::ExtractOptions options;
  options.extractor_path = ELLM_EXTRACTOR_PATH;
  for (const std::string& name : {std::string("report.txt"), std::string("sub/report.txt")}) {
    SCOPED_TRACE(name);
    ingest::ParsedJob parsed =
        ingest::ParseJobMessage(R"({"id":"j","pipeline":"document-stats","documents":[{"path":")" +
                                    inbox + "/" + name + R"("}]})",
                                "", limits);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    const ingest::JobDocument& doc = parsed.message.documents[0];
    auto before = LoadJobDocument(doc, options);
    ASSERT_TRUE(before.ok()) << before.status().ToString();
    EXPECT_EQ(before->pages[0].text, "public");

    if (name == "report.txt") {
      fs::remove(inbox + "/report.txt");
      fs::create_symlink(outside + "/secret.txt", inbox + "/report.txt");
    } else {
      fs::remove_all(inbox + "/sub");
      fs::create_directory_symlink(outside + "/sub", inbox + "/sub");
    }
    auto after = LoadJobDocument(doc, options);
    ASSERT_FALSE(after.ok()) << "read through the swapped-in link: " << after->pages[0].text;
    EXPECT_EQ(ingest::ExtractErrorOf(after.status()), ingest::ExtractError::kUnreadable);
    EXPECT_NE(after.status().message().find("symbolic link"), std::string::npos)
        << after.status().ToString();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::pipelines
