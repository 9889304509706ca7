// Image bytes -> Document (see image_to_document.h).
#include "pdf/image_to_document.h"

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

class ImagePages {
 public:
  ImagePages(const std::string& bytes, l_int32 format)
      : data_(reinterpret_cast<const l_uint8*>(bytes.data())),
        size_(bytes.size()),
        tiff_(IsTiff(format)) {}

  // Pages, counted from their headers up to `limit` + 1.
  int Count(int limit) const {
    if (!tiff_) return 1;
    int n = 0;
    while (n <= limit && Header(n, nullptr, nullptr)) ++n;
    return n;
  }

  bool Header(int n, int64_t* w, int64_t* h) const {
    l_int32 pw = 0, ph = 0, bps = 0, spp = 0, res = 0, cmap = 0, format = 0;
    const bool ok =
        tiff_ ? readHeaderMemTiff(data_, size_, n, &pw, &ph, &bps, &spp, &res, &cmap, &format) == 0
              : pixReadHeaderMem(data_, size_, &format, &pw, &ph, &bps, &spp, &cmap) == 0;
    if (w) *w = pw;
    if (h) *h = ph;
    return ok && pw > 0 && ph > 0;
  }

  PixPtr Decode(int n) const {
    return PixPtr(tiff_ ? pixReadMemTiff(data_, size_, n) : pixReadMem(data_, size_));
  }

 private:
  const l_uint8* data_;
  size_t size_;
  bool tiff_;
};

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

StatusOr<Document> ImageToDocument(const std::string& bytes, const std::string& name,
                                   const PdfOptions& options) {
  setMsgSeverity(L_SEVERITY_NONE);  // errors are ours to report
  // The parent sent it here for its PNG, JPEG or TIFF signature.
  l_int32 format = IFF_UNKNOWN;
  if (bytes.size() < 12 ||
      findFileFormatBuffer(reinterpret_cast<const l_uint8*>(bytes.data()), &format) != 0 ||
      MediaType(format).empty()) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": the image's header cannot be read (truncated or corrupt)");
  }
  const ImagePages images(bytes, format);
  const int count = images.Count(options.max_pages);
  if (count == 0) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": the image's header cannot be read (truncated or corrupt)");
  }
  if (count > options.max_pages) {
    return MakeExtractError(ExtractError::kTooManyPages,
                            name + ": more than " + std::to_string(options.max_pages) +
                                " pages, above the limit of " + std::to_string(options.max_pages));
  }
  if (options.ocr == OcrMode::kOff) {
    return MakeExtractError(ExtractError::kNoTextLayer,
                            name + ": an image has no text layer, and OCR is off (extract.ocr)");
  }
  Document doc;
  doc.metadata.media_type = std::string(MediaType(format));
  doc.metadata.page_count = count;
  doc.pages.resize(static_cast<size_t>(count));
  ELLM_ASSIGN_OR_RETURN(std::unique_ptr<PageReader> reader,
                        PageReader::Create({.languages = options.ocr_languages,
                                            .page_seconds = options.ocr_page_seconds}));
  std::vector<std::vector<Word>> words(static_cast<size_t>(count));
  for (int n = 0; n < count; ++n) {
    const std::string page = count > 1 ? " page " + std::to_string(n + 1) : "";
    int64_t w = 0, h = 0;
    images.Header(n, &w, &h);
    if (w * h > options.ocr_max_pixels) {
      return MakeExtractError(ExtractError::kResourceLimit,
                              name + page + ": " + std::to_string(w) + " x " + std::to_string(h) +
                                  " pixels, above the limit of " +
                                  std::to_string(options.ocr_max_pixels / 1'000'000) +
                                  " megapixels an image page may have");
    }
    PixPtr pix = images.Decode(n);
    GrayImage gray = pix ? ToGray(pix.get()) : GrayImage{};
    if (gray.pixels.empty()) {
      return MakeExtractError(ExtractError::kDamaged, name + page +
                                                          ": the image cannot be decoded "
                                                          "(truncated or corrupt)");
    }
    pix.reset();
    OcrPage ocr = reader->Read(gray);
    DescribeOcrPage(ocr, options.ocr_page_seconds, &doc.pages[static_cast<size_t>(n)]);
    words[static_cast<size_t>(n)] = std::move(ocr.words);
  }
  if (!AssembleText(std::move(words), &doc)) {
    return MakeExtractError(
        ExtractError::kNoTextLayer,
        name + ": OCR read no words on " +
            (count == 1 ? "the image" : "its " + std::to_string(count) + " pages"));
  }
  return doc;
}

}  // namespace ellm::ingest::pdf
