// The poppler-cpp adapter (see poppler_pdf.h).
#include "pdf/poppler_pdf.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <cmath>
#include <cstring>

#include <deque>

#include "ellm/ingest/extract.h"
#include "text/normalize.h"

namespace ellm::ingest::pdf {
namespace {

constexpr size_t kKeptErrors = 4;

std::deque<std::string>& Errors() {
  static std::deque<std::string> errors;
  return errors;
}

void CollectError(const std::string& message, void* /*closure*/) {
  auto& errors = Errors();
  errors.push_back(message.substr(0, 200));
  if (errors.size() > kKeptErrors) errors.pop_front();
}

// UTF-16 -> UTF-8 by hand: ustring::to_utf8() opens an iconv converter per
// call, which cost more than all of our layout work on a page of words.
// Unpaired surrogates become U+FFFD.
std::string Utf8(const poppler::ustring& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char32_t c = s[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < s.size() && s[i + 1] >= 0xDC00 &&
        s[i + 1] <= 0xDFFF) {
      c = 0x10000 + ((c - 0xD800) << 10) + (s[++i] - 0xDC00);
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      c = 0xFFFD;
    }
    if (c == 0) continue;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return text::NormalizeText(out);
}

}  // namespace

std::string RecentPopplerErrors() {
  std::string out;
  for (const std::string& e : Errors()) {
    if (!out.empty()) out += "; ";
    out += e;
  }
  return out;
}

StatusOr<std::unique_ptr<PdfFile>> PdfFile::Open(std::string bytes, const std::string& name) {
  poppler::set_debug_error_function(&CollectError, nullptr);
  Errors().clear();
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return MakeExtractError(ExtractError::kTooLarge, name + ": too large for poppler (2 GiB)");
  }
  std::unique_ptr<PdfFile> file(new PdfFile());
  file->bytes_ = std::move(bytes);
  try {
    file->doc_.reset(poppler::document::load_from_raw_data(file->bytes_.data(),
                                                           static_cast<int>(file->bytes_.size())));
  } catch (const std::bad_alloc&) {
    throw;  // the extractor reports memory exhaustion as a resource limit
  } catch (const std::exception& e) {
    return MakeExtractError(ExtractError::kDamaged, name + ": poppler failed: " + e.what());
  }
  if (file->doc_ == nullptr) {
    std::string why = RecentPopplerErrors();
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": damaged PDF that cannot be repaired" +
                                (why.empty() ? "" : " (poppler: " + why + ")"));
  }
  if (file->doc_->is_locked()) {
    return MakeExtractError(ExtractError::kEncrypted,
                            name + ": the PDF is encrypted and needs a password to open");
  }
  return file;
}

PdfFile::~PdfFile() = default;

PdfInfo PdfFile::Info() const {
  PdfInfo info;
  info.title = Utf8(doc_->get_title());
  info.author = Utf8(doc_->get_author());
  info.producer = Utf8(doc_->get_producer());
  info.page_count = std::max(0, doc_->pages());
  return info;
}

std::vector<Word> PdfFile::PageWords(int index) const {
  std::vector<Word> words;
  std::unique_ptr<poppler::page> page(doc_->create_page(index));
  if (!page) return words;
  // Not text_list(text_list_include_font): for a font the PDF does not
  // embed, poppler's font scan looks for a system font file through
  // fontconfig, which probes and writes its cache, and the sandbox forbids
  // that. A word's box height stands for its font size (only sizes relative
  // to the body's are used), and weight is unknown.
  for (const poppler::text_box& box : page->text_list()) {
    const poppler::rectf r = box.bbox();
    Word w;
    w.text = Utf8(box.text());
    w.x0 = r.left();
    w.y0 = r.top();
    w.x1 = r.right();
    w.y1 = r.bottom();
    w.space_after = box.has_space_after();
    w.horizontal = box.rotation() == 0;
    w.font_size = r.bottom() - r.top();
    words.push_back(std::move(w));
  }
  return words;
}

GrayImage PdfFile::RenderPage(int index, double dpi, int64_t max_pixels) const {
  GrayImage out;
  std::unique_ptr<poppler::page> page(doc_->create_page(index));
  if (!page || dpi <= 0) return out;
  const poppler::rectf box = page->page_rect(poppler::crop_box);
  const double w_in = std::abs(box.width()) / 72.0, h_in = std::abs(box.height()) / 72.0;
  if (!(w_in > 0) || !(h_in > 0)) return out;
  // A page of 200 x 200 inches at 300 dpi would be 3.6 gigapixels.
  const double area = w_in * h_in;
  if (area * dpi * dpi > static_cast<double>(max_pixels)) {
    dpi = std::sqrt(static_cast<double>(max_pixels) / area);
  }
  if (dpi < 10) return out;  // a strip too long to read at any useful size
  poppler::page_renderer renderer;
  renderer.set_render_hints(poppler::page_renderer::antialiasing |
                            poppler::page_renderer::text_antialiasing);
  renderer.set_image_format(poppler::image::format_gray8);
  poppler::image img = renderer.render_page(page.get(), dpi, dpi);
  if (!img.is_valid() || img.format() != poppler::image::format_gray8) return out;
  out.width = img.width();
  out.height = img.height();
  out.stride = img.bytes_per_row();
  out.dpi = dpi;
  const size_t bytes = static_cast<size_t>(out.stride) * static_cast<size_t>(out.height);
  out.pixels.resize(bytes);
  std::memcpy(out.pixels.data(), img.const_data(), bytes);
  return out;
}

}  // namespace ellm::ingest::pdf
