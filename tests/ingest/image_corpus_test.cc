// Replays the image fuzz corpus (tests/ingest/image_corpus/: the seeds of
// tests/fuzz/make_image_seeds.py and what scripts/fuzz found) through the
// image reader the extractor child runs (ingest/pdf/image_file.h), in this
// process, with the promises tests/fuzz/image_fuzz.cc checks, so CI's
// ASan+UBSan run covers them; and the seeds' own verdicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ellm/ingest/extract.h"
#include "pdf/image_file.h"
#include "test_env.h"

namespace ellm::ingest::pdf {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

fs::path CorpusDir() {
  return fs::path(::ellm::testing::SourceDir()) / "tests/ingest/image_corpus";
}

TEST(ImageCorpus, EveryFileIsPagesOrAnExtractError) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(CorpusDir())) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u) << "seeds missing in " << CorpusDir();
  int pages = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    const std::string bytes = Read(path);
    StatusOr<ImageFile> image = ImageFile::Open(bytes, path.filename().string(), 8);
    if (!image.ok()) {
      EXPECT_TRUE(ExtractErrorOf(image.status()).has_value()) << image.status().ToString();
      continue;
    }
    for (int n = 0; n < image->page_count(); ++n) {
      StatusOr<GrayImage> page = image->Page(n, 4'000'000);
      if (!page.ok()) {
        EXPECT_TRUE(ExtractErrorOf(page.status()).has_value()) << page.status().ToString();
        continue;
      }
      ++pages;
      EXPECT_EQ(page->pixels.size(), static_cast<size_t>(page->stride) * page->height);
    }
  }
  EXPECT_GE(pages, 8);
}

TEST(ImageCorpus, SeedsGiveTheirVerdicts) {
  // ImageFile keeps a view of its bytes: they live here.
  std::deque<std::string> held;  // (push_back moves no element)
  auto open = [&held](const char* name) {
    held.push_back(Read(CorpusDir() / (std::string(name) + ".bin")));
    return ImageFile::Open(held.back(), name, 8);
  };
  StatusOr<ImageFile> two = open("seed-two-pages.tif");
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->page_count(), 2);
  EXPECT_EQ(two->media_type(), "image/tiff");
  StatusOr<GrayImage> second = two->Page(1, 4'000'000);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->width, 12);
  EXPECT_EQ(second->height, 8);
  EXPECT_EQ(second->dpi, 200);
  StatusOr<ImageFile> bomb = open("seed-bomb.png");
  ASSERT_TRUE(bomb.ok()) << bomb.status().ToString();
  StatusOr<GrayImage> huge = bomb->Page(0, 4'000'000);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(ExtractErrorOf(huge.status()), ExtractError::kResourceLimit);
  StatusOr<ImageFile> jpeg = open("seed-page.jpg");
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
  EXPECT_EQ(jpeg->media_type(), "image/jpeg");
  EXPECT_TRUE(jpeg->Page(0, 4'000'000).ok());
  // One page too many for the limit.
  StatusOr<ImageFile> limited =
      ImageFile::Open(Read(CorpusDir() / "seed-two-pages.tif.bin"), "t", 1);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(ExtractErrorOf(limited.status()), ExtractError::kTooManyPages);
}

}  // namespace
}  // namespace ellm::ingest::pdf
