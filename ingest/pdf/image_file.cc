// Image files page by page (see image_file.h).
#include "pdf/image_file.h"

#include <leptonica/allheaders.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ellm/ingest/extract.h"

namespace ellm::ingest::pdf {
namespace {

struct PixDeleter {
  void operator()(PIX* pix) const { pixDestroy(&pix); }
};
using PixPtr = std::unique_ptr<PIX, PixDeleter>;

bool IsTiff(l_int32 format) {
  return format == IFF_TIFF || format == IFF_TIFF_PACKBITS || format == IFF_TIFF_RLE ||
         format == IFF_TIFF_G3 || format == IFF_TIFF_G4 || format == IFF_TIFF_LZW ||
         format == IFF_TIFF_ZIP || format == IFF_TIFF_JPEG;
}

// Any depth -> 8-bit grey, with the image's resolution (300 when it gives
// none, or one no scanner uses).
GrayImage ToGray(PIX* pix) {
  GrayImage out;
  PixPtr gray(pixConvertTo8(pix, 0));
  if (!gray) return out;
  l_int32 w = 0, h = 0, d = 0;
  pixGetDimensions(gray.get(), &w, &h, &d);
  if (d != 8 || w <= 0 || h <= 0) return out;
  out.width = w;
  out.height = h;
  out.stride = w;
  const int res = pixGetXRes(pix);
  out.dpi = res >= 50 && res <= 1200 ? res : 300;
  out.pixels.resize(static_cast<size_t>(w) * static_cast<size_t>(h));
  const l_uint32* data = pixGetData(gray.get());
  const l_int32 wpl = pixGetWpl(gray.get());
  for (l_int32 y = 0; y < h; ++y) {
    const l_uint32* line = data + static_cast<ptrdiff_t>(y) * wpl;
    uint8_t* row = out.pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(w);
    for (l_int32 x = 0; x < w; ++x) row[x] = static_cast<uint8_t>(GET_DATA_BYTE(line, x));
  }
  return out;
}

std::string_view MediaType(l_int32 format) {
  if (format == IFF_PNG) return kMediaTypePng;
  if (format == IFF_JFIF_JPEG) return kMediaTypeJpeg;
  if (IsTiff(format)) return kMediaTypeTiff;
  return "";
}

}  // namespace

struct ImageFile::Data {
  std::string_view bytes;
  bool tiff = false;
  const l_uint8* data() const { return reinterpret_cast<const l_uint8*>(bytes.data()); }
  bool Header(int n, int64_t* w, int64_t* h) const {
    l_int32 pw = 0, ph = 0, bps = 0, spp = 0, res = 0, cmap = 0, format = 0;
    const bool ok =
        tiff ? readHeaderMemTiff(data(), bytes.size(), n, &pw, &ph, &bps, &spp, &res, &cmap,
                                 &format) == 0
             : pixReadHeaderMem(data(), bytes.size(), &format, &pw, &ph, &bps, &spp, &cmap) == 0;
    *w = pw;
    *h = ph;
    return ok && pw > 0 && ph > 0;
  }
};

ImageFile::ImageFile() = default;
ImageFile::ImageFile(ImageFile&&) noexcept = default;
ImageFile& ImageFile::operator=(ImageFile&&) noexcept = default;
ImageFile::~ImageFile() = default;

StatusOr<ImageFile> ImageFile::Open(std::string_view bytes, const std::string& name,
                                    int max_pages) {
  setMsgSeverity(L_SEVERITY_NONE);  // errors are ours to report
  // The parent sent it here for its PNG, JPEG or TIFF signature.
  l_int32 format = IFF_UNKNOWN;
  if (bytes.size() < 12 ||
      findFileFormatBuffer(reinterpret_cast<const l_uint8*>(bytes.data()), &format) != 0 ||
      MediaType(format).empty()) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": the image's header cannot be read (truncated or corrupt)");
  }
  ImageFile file;
  file.data_ = std::make_unique<Data>(Data{bytes, IsTiff(format)});
  file.name_ = name;
  file.media_type_ = MediaType(format);
  // Pages, counted from their headers up to one past the limit.
  int64_t w = 0, h = 0;
  while (file.pages_ <= max_pages && (file.pages_ == 0 || file.data_->tiff) &&
         file.data_->Header(file.pages_, &w, &h)) {
    ++file.pages_;
  }
  if (file.pages_ == 0) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": the image's header cannot be read (truncated or corrupt)");
  }
  if (file.pages_ > max_pages) {
    return MakeExtractError(ExtractError::kTooManyPages,
                            name + ": more than " + std::to_string(max_pages) +
                                " pages, above the limit of " + std::to_string(max_pages));
  }
  return file;
}

StatusOr<GrayImage> ImageFile::Page(int n, int64_t max_pixels) const {
  const std::string page = pages_ > 1 ? " page " + std::to_string(n + 1) : "";
  int64_t w = 0, h = 0;
  if (n < 0 || n >= pages_ || !data_->Header(n, &w, &h)) {
    return MakeExtractError(ExtractError::kDamaged, name_ + page + ": no such page");
  }
  if (w * h > max_pixels) {
    return MakeExtractError(ExtractError::kResourceLimit,
                            name_ + page + ": " + std::to_string(w) + " x " + std::to_string(h) +
                                " pixels, above the limit of " +
                                std::to_string(max_pixels / 1'000'000) +
                                " megapixels an image page may have");
  }
  PixPtr pix(data_->tiff ? pixReadMemTiff(data_->data(), data_->bytes.size(), n)
                         : pixReadMem(data_->data(), data_->bytes.size()));
  GrayImage gray = pix ? ToGray(pix.get()) : GrayImage{};
  // A decoded page must be the one its header described.
  if (gray.pixels.empty() || gray.width != w || gray.height != h) {
    return MakeExtractError(ExtractError::kDamaged,
                            name_ + page + ": the image cannot be decoded (truncated or corrupt)");
  }
  return gray;
}

}  // namespace ellm::ingest::pdf
