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

std::string ImageText(std::string_view bytes, const PdfOptions& options,
                      std::unique_ptr<PageReader>* reader) {
  if (options.ocr == OcrMode::kOff) return "";
  StatusOr<ImageFile> image = ImageFile::Open(bytes, "image", options.max_pages);
  if (!image.ok()) return "";
  if (*reader == nullptr) {
    StatusOr<std::unique_ptr<PageReader>> made = PageReader::Create(
        {.languages = options.ocr_languages, .page_seconds = options.ocr_page_seconds});
    if (!made.ok()) return "";
    *reader = std::move(made).value();
  }
  Document doc;
  doc.pages.resize(static_cast<size_t>(image->page_count()));
  std::vector<std::vector<Word>> words(doc.pages.size());
  size_t count = 0;
  for (int n = 0; n < image->page_count(); ++n) {
    StatusOr<GrayImage> gray = image->Page(n, options.ocr_max_pixels);
    if (!gray.ok()) continue;
    words[static_cast<size_t>(n)] = (*reader)->Read(*gray).words;
    count += words[static_cast<size_t>(n)].size();
  }
  if (count < 3 || !AssembleText(std::move(words), &doc)) return "";
  std::string text;
  for (const Page& p : doc.pages) {
    if (p.text.empty()) continue;
    if (!text.empty()) text += "\n\n";
    text += p.text;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace ellm::ingest::pdf
