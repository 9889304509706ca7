// libFuzzer target for the image files the ellm-extract child reads as
// scans (ingest/pdf/image_file.h: PNG, JPEG, TIFF with any number of
// pages, decoded by Leptonica): any bytes must open as pages or fail with
// an ExtractError, every page must decode to the size its header gave or
// fail the same way, and no page above the pixel limit is decoded. OCR is
// left out (it reads pixels, not the file). Built only with -DELLM_FUZZ=ON
// and clang; run it with `scripts/fuzz SECONDS image`. Seeds:
// tests/ingest/image_corpus/ (tests/fuzz/make_image_seeds.py), which
// tests/ingest/image_corpus_test.cc replays in the ordinary build.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ellm/ingest/extract.h"
#include "pdf/image_file.h"

namespace {

// Small enough that a fuzzed header cannot make one input take seconds.
constexpr int kMaxPages = 8;
constexpr int64_t kMaxPixels = 4'000'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ellm::ingest::pdf::ImageFile;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ellm::StatusOr<ImageFile> image = ImageFile::Open(bytes, "fuzz.tif", kMaxPages);
  if (!image.ok()) {
    if (!ellm::ingest::ExtractErrorOf(image.status()).has_value()) __builtin_trap();
    return 0;
  }
  if (image->page_count() < 1 || image->page_count() > kMaxPages) __builtin_trap();
  for (int n = 0; n < image->page_count(); ++n) {
    ellm::StatusOr<ellm::ingest::pdf::GrayImage> page = image->Page(n, kMaxPixels);
    if (!page.ok()) {
      if (!ellm::ingest::ExtractErrorOf(page.status()).has_value()) __builtin_trap();
      continue;
    }
    const int64_t pixels = int64_t{page->width} * page->height;
    if (pixels <= 0 || pixels > kMaxPixels ||
        page->pixels.size() != static_cast<size_t>(page->stride) * page->height) {
      __builtin_trap();
    }
  }
  return 0;
}
