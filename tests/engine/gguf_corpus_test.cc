// Replays the GGUF fuzz corpus (tests/engine/gguf_corpus/: seeds from
// make_seeds.py plus inputs scripts/fuzz found) through the parser with
// the ordinary build, so CI's ASan+UBSan run covers every path the fuzzer
// reached without needing clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "ellm/engine/gguf.h"
#include "test_env.h"

namespace ellm::gguf {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> CorpusFiles() {
  fs::path dir = fs::path(::ellm::testing::SourceDir()) / "tests/engine/gguf_corpus";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".gguf") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t Sum(std::span<const uint8_t> bytes) {
  uint64_t s = 0;
  for (uint8_t b : bytes) s += b;
  return s;
}

TEST(GgufCorpus, EveryFileParsesOrFailsCleanlyAndTensorsStayInside) {
  std::vector<fs::path> files = CorpusFiles();
  ASSERT_FALSE(files.empty()) << "no .gguf files in " << ::ellm::testing::SourceDir()
                              << "/tests/engine/gguf_corpus (run make_seeds.py there)";
  int parsed = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << path;
    // Exactly sized, so ASan flags a view one byte past the end.
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    auto f = GgufFile::Parse(std::span<const uint8_t>(bytes.data(), bytes.size()),
                             path.filename().string());
    if (!f.ok()) {
      EXPECT_FALSE(f.status().ToString().empty());
      continue;
    }
    ++parsed;
    const uint8_t* begin = bytes.data();
    const uint8_t* end = begin + bytes.size();
    EXPECT_LE(f->data_offset(), bytes.size() + f->alignment());
    for (const TensorInfo& t : f->tensors()) {
      ASSERT_NE(t.data, nullptr) << t.name;
      ASSERT_GE(t.data, begin) << t.name;
      ASSERT_LE(t.n_bytes, static_cast<uint64_t>(end - t.data)) << t.name;
      EXPECT_EQ(static_cast<uint64_t>(t.data - begin), f->data_offset() + t.offset) << t.name;
      volatile uint64_t sink = Sum(std::span<const uint8_t>(t.data, t.n_bytes));
      (void)sink;
    }
    for (const KeyValue& kv : f->metadata()) {
      EXPECT_FALSE(GgufFile::FormatValue(kv.value).empty()) << kv.key;
    }
  }
  EXPECT_GT(parsed, 0) << "the corpus should hold valid files too (make_seeds.py writes some)";
}

}  // namespace
}  // namespace ellm::gguf
