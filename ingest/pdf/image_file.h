// An image file (PNG, JPEG, TIFF with any number of pages) read page by
// page with Leptonica, with every page's header checked before it is
// decoded. The only file that includes Leptonica. Used by the ellm-extract
// child (image_to_document.h) and the `image` fuzz target.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "pdf/ocr.h"

namespace ellm::ingest::pdf {

inline constexpr std::string_view kMediaTypePng = "image/png";
inline constexpr std::string_view kMediaTypeJpeg = "image/jpeg";
inline constexpr std::string_view kMediaTypeTiff = "image/tiff";

// The pages of an image file, decoded one at a time (ImageToDocument, and
// the `image` fuzz target without OCR). Keeps a view of the bytes.
class ImageFile {
 public:
  // Reads the headers: kDamaged when the first cannot be read (not a PNG,
  // JPEG or TIFF, or truncated), kTooManyPages above `max_pages`.
  static StatusOr<ImageFile> Open(std::string_view bytes, const std::string& name, int max_pages);
  ImageFile(ImageFile&&) noexcept;
  ImageFile& operator=(ImageFile&&) noexcept;
  ~ImageFile();

  int page_count() const { return pages_; }
  std::string_view media_type() const { return media_type_; }
  // Page n (0-based) as 8-bit grey: kResourceLimit when its header says it
  // has more than `max_pixels` (nothing is decoded then), kDamaged when it
  // cannot be decoded or decodes to another size than its header's.
  StatusOr<GrayImage> Page(int n, int64_t max_pixels) const;

 private:
  struct Data;
  ImageFile();
  std::unique_ptr<Data> data_;
  std::string name_;
  std::string_view media_type_;
  int pages_ = 0;
};

}  // namespace ellm::ingest::pdf
