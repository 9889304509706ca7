// Replays the Word / OpenDocument fuzz corpus (tests/ingest/office_corpus/:
// LibreOffice's and hand-written files, deflated and stored, encrypted and
// truncated, plus inputs scripts/fuzz found) through the reader the
// extractor child runs, in this process, with the promises
// tests/fuzz/office_fuzz.cc checks, so CI's ASan+UBSan run covers them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "office/office_to_document.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

namespace fs = std::filesystem;

TEST(OfficeCorpus, EveryFileIsADocumentOrAnExtractError) {
  const fs::path dir = fs::path(::ellm::testing::SourceDir()) / "tests/ingest/office_corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 6u) << "seeds missing in " << dir;
  int documents = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const StatusOr<Document> doc = office::OfficeToDocument(bytes, path.filename().string());
    if (!doc.ok()) {
      EXPECT_TRUE(ExtractErrorOf(doc.status()).has_value()) << doc.status().ToString();
      continue;
    }
    ++documents;
    EXPECT_TRUE(DocumentFromJson(ToJson(*doc)).ok());
  }
  EXPECT_GE(documents, 3);  // the LibreOffice and hand-written seeds read
}

}  // namespace
}  // namespace ellm::ingest
