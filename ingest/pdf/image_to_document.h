// Image bytes (PNG, JPEG, TIFF with any number of pages: a scan or a fax)
// -> Document, in this process: each page decoded (image_file.h), read
// by Tesseract (ocr.h), then the same text stages as a PDF's pages. Run by the
// ellm-extract child (`--kind image`), inside its sandbox.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "ellm/ingest/document.h"
#include "pdf/image_file.h"
#include "pdf/pdf_to_document.h"

namespace ellm::ingest::pdf {

// Uses options' max_pages, ocr (kOff: every image is kNoTextLayer),
// ocr_languages, ocr_page_seconds and ocr_max_pixels (a page above it is
// kResourceLimit, refused from its header before it is decoded). A page's
// resolution is the image's own, else 300 dpi. Errors name `name` and
// carry ExtractError reasons: kDamaged (not a PNG, JPEG or TIFF, or a page
// that cannot be decoded: truncated, corrupt), kTooManyPages,
// kResourceLimit, kNoTextLayer (OCR read nothing on any page), kUnreadable
// (OCR's languages).
StatusOr<Document> ImageToDocument(const std::string& bytes, const std::string& name,
                                   const PdfOptions& options);

// The text OCR reads in an image (one embedded in a Word file), its pages'
// lines laid out as a page's and joined; "" when OCR is off, the image
// cannot be read or shows fewer than three words (a logo, a photo).
// `reader` is created on first use and kept for the next image.
std::string ImageText(std::string_view bytes, const PdfOptions& options,
                      std::unique_ptr<PageReader>* reader);

}  // namespace ellm::ingest::pdf
