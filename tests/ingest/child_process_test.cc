// Isolation: a misbehaving extractor (tests/ingest/fake_extractor.cc) is
// killed or contained and reported as a clear error, and other extractions
// are unaffected.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <future>

#include "ellm/base/sanitizers.h"
#include "ellm/ingest/extract.h"
#include "pdf_test_util.h"

namespace ellm::ingest {
namespace {

using Clock = std::chrono::steady_clock;

StatusOr<Document> RunFake(const char* mode, ExtractOptions options = {}) {
  setenv("ELLM_FAKE_EXTRACTOR_MODE", mode, 1);
  options.extractor_path = ELLM_FAKE_EXTRACTOR_PATH;
  return ExtractDocument(testing::PdfDataDir() + "/single_column.pdf", options);
}

void ExpectKind(const StatusOr<Document>& doc, ExtractError kind, const std::string& needle) {
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), kind) << doc.status().ToString();
  EXPECT_NE(doc.status().message().find(needle), std::string::npos) << doc.status().ToString();
  EXPECT_NE(doc.status().message().find("single_column.pdf"), std::string::npos);
}

TEST(ExtractorIsolation, KillsAHangingChildAtTheWallClockLimit) {
  ExtractOptions options;
  options.wall_timeout = std::chrono::milliseconds(500);
  const auto start = Clock::now();
  ExpectKind(RunFake("hang", options), ExtractError::kTimeout, "wall-clock limit");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ExpectKind(RunFake("silent_hang", options), ExtractError::kTimeout, "wall-clock limit");
}

TEST(ExtractorIsolation, StopsAChildAtItsCpuLimit) {
  ExtractOptions options;
  options.cpu_seconds = 1;
  ExpectKind(RunFake("spin", options), ExtractError::kTimeout, "CPU-time limit of 1 s");
}

TEST(ExtractorIsolation, ReportsACrash) {
  ExpectKind(RunFake("crash"), ExtractError::kCrashed, "signal 11");
  ExpectKind(RunFake("exit7"), ExtractError::kCrashed, "status 7");
  ExpectKind(RunFake("exit7"), ExtractError::kCrashed, "something went wrong");
  ExpectKind(RunFake("garbage"), ExtractError::kCrashed, "garbled");
}

TEST(ExtractorIsolation, ContainsAMemoryBlowUp) {
#if ELLM_ASAN
  GTEST_SKIP() << "no address-space limit under ASan (see child_process.cc)";
#endif
  ExtractOptions options;
  options.address_space_bytes = int64_t{512} << 20;
  ExpectKind(RunFake("alloc", options), ExtractError::kResourceLimit, "512 MiB");
}

TEST(ExtractorIsolation, CapsTheOutput) {
  ExtractOptions options;
  options.max_output_bytes = 1 << 20;
  ExpectKind(RunFake("flood", options), ExtractError::kResourceLimit, "output limit");
}

TEST(ExtractorIsolation, ChildSeesOnlyStdioAndTheInput) {
  auto doc = RunFake("fd_report");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->pages[0].text, "0 1 2 3 ");
}

TEST(ExtractorIsolation, OtherExtractionsAreUnaffected) {
  setenv("ELLM_FAKE_EXTRACTOR_MODE", "hang", 1);  // before any thread reads the environment
  auto hung = std::async(std::launch::async, [] {
    ExtractOptions options;
    options.wall_timeout = std::chrono::milliseconds(3000);
    options.extractor_path = ELLM_FAKE_EXTRACTOR_PATH;
    return ExtractDocument(testing::PdfDataDir() + "/single_column.pdf", options);
  });
  const auto start = Clock::now();
  auto doc = ExtractDocument(testing::PdfDataDir() + "/table.pdf", testing::TestOptions());
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2500));
  ExpectKind(hung.get(), ExtractError::kTimeout, "wall-clock");
}

TEST(ExtractorIsolation, NamesAMissingExtractor) {
  ExtractOptions options;
  options.extractor_path = "/nonexistent/ellm-extract";
  auto doc = ExtractDocument(testing::PdfDataDir() + "/table.pdf", options);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(ExtractErrorOf(doc.status()), std::nullopt);  // a setup problem, not the file's
  EXPECT_NE(doc.status().message().find("/nonexistent/ellm-extract"), std::string::npos);
}

}  // namespace
}  // namespace ellm::ingest
