// Replays the extractor output fuzz corpus (tests/ingest/extractor_output_corpus/:
// the real child's output on tests/data/pdf and hand-made hostile replies,
// plus inputs scripts/fuzz found) through what the parent reads, with the
// promises tests/fuzz/extractor_output_fuzz.cc checks, so CI's ASan+UBSan
// run covers them without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "extract/protocol.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

namespace fs = std::filesystem;

TEST(ExtractorOutputCorpus, EveryReplyIsADocumentOrAClearError) {
  const fs::path dir =
      fs::path(::ellm::testing::SourceDir()) / "tests/ingest/extractor_output_corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 8u) << "seeds missing in " << dir;
  int documents = 0;
  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    SCOPED_TRACE(name);
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const StatusOr<Document> doc = DocumentFromJson(text);
    if (doc.ok()) {
      ++documents;
      int last = 0;
      for (const Page& p : doc->pages) {
        EXPECT_GT(p.number, last);
        last = p.number;
      }
    } else {
      EXPECT_FALSE(doc.status().message().empty());
    }
    const Status error = DecodeExtractorError(text);
    EXPECT_FALSE(error.ok());
    EXPECT_TRUE(ExtractErrorOf(error).has_value()) << error.ToString();
  }
  EXPECT_GE(documents, 1) << "the real child's output should read back";
  // The real child's report keeps its kind; a made-up kind is a crash.
  std::ifstream report(dir / "seed-encrypted-error.json");
  const std::string text((std::istreambuf_iterator<char>(report)),
                         std::istreambuf_iterator<char>());
  EXPECT_EQ(ExtractErrorOf(DecodeExtractorError(text)), ExtractError::kEncrypted);
  EXPECT_EQ(ExtractErrorOf(DecodeExtractorError(R"({"error":"no_such_kind","message":"x"})")),
            ExtractError::kCrashed);
}

}  // namespace
}  // namespace ellm::ingest
