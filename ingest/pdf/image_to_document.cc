// Image bytes -> Document (see image_to_document.h).
#include "pdf/image_to_document.h"

#include <memory>
#include <vector>

#include "ellm/ingest/extract.h"

namespace ellm::ingest::pdf {

StatusOr<Document> ImageToDocument(const std::string& bytes, const std::string& name,
                                   const PdfOptions& options) {
  ELLM_ASSIGN_OR_RETURN(ImageFile image, ImageFile::Open(bytes, name, options.max_pages));
  const int count = image.page_count();
  if (options.ocr == OcrMode::kOff) {
    return MakeExtractError(ExtractError::kNoTextLayer,
                            name + ": an image has no text layer, and OCR is off (extract.ocr)");
  }
  Document doc;
  doc.metadata.media_type = std::string(image.media_type());
  doc.metadata.page_count = count;
  doc.pages.resize(static_cast<size_t>(count));
  ELLM_ASSIGN_OR_RETURN(std::unique_ptr<PageReader> reader,
                        PageReader::Create({.languages = options.ocr_languages,
                                            .page_seconds = options.ocr_page_seconds}));
  std::vector<std::vector<Word>> words(static_cast<size_t>(count));
  for (int n = 0; n < count; ++n) {
    ELLM_ASSIGN_OR_RETURN(GrayImage gray, image.Page(n, options.ocr_max_pixels));
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
