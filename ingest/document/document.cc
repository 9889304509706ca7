// Document rendering and its JSON form (see document.h).
#include "ellm/ingest/document.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "ellm/base/json.h"

namespace ellm::ingest {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kFormat = "ellm.document";
constexpr int kVersion = 1;

// Reads obj[key] as T into *out; a missing key keeps *out (all fields but
// "pages" have defaults), a wrong type is an error naming the field.
template <typename T>
Status ReadField(const json& obj, const char* key, const std::string& where, T* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return OkStatus();
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return InvalidArgumentError(where + "." + key + " is not a string");
  } else {
    // In range of T too: the child's numbers are as untrusted as its text.
    const bool fits =
        it->is_number_unsigned()
            ? it->template get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
            : it->is_number_integer() &&
                  it->template get<int64_t>() >= std::numeric_limits<T>::min() &&
                  it->template get<int64_t>() <= std::numeric_limits<T>::max();
    if (!fits) {
      return InvalidArgumentError(where + "." + key + " is not an integer in range");
    }
  }
  *out = it->template get<T>();
  return OkStatus();
}

Status ReadMetadata(const json& m, DocumentMetadata* meta) {
  if (!m.is_object()) return InvalidArgumentError("document.metadata is not an object");
  const std::string w = "document.metadata";
  ELLM_RETURN_IF_ERROR(ReadField(m, "source", w, &meta->source));
  ELLM_RETURN_IF_ERROR(ReadField(m, "media_type", w, &meta->media_type));
  ELLM_RETURN_IF_ERROR(ReadField(m, "title", w, &meta->title));
  ELLM_RETURN_IF_ERROR(ReadField(m, "author", w, &meta->author));
  ELLM_RETURN_IF_ERROR(ReadField(m, "producer", w, &meta->producer));
  ELLM_RETURN_IF_ERROR(ReadField(m, "page_count", w, &meta->page_count));
  ELLM_RETURN_IF_ERROR(ReadField(m, "byte_size", w, &meta->byte_size));
  ELLM_RETURN_IF_ERROR(ReadField(m, "sha256", w, &meta->sha256));
  if (meta->page_count < 0 || meta->byte_size < 0) {
    return InvalidArgumentError("document.metadata: negative page_count or byte_size");
  }
  return OkStatus();
}

// Headings point at pages of the document: levels 1..9, pages it has.
Status ReadHeadings(const json& list, Document* doc) {
  if (!list.is_array()) return InvalidArgumentError("document JSON: \"headings\" is not an array");
  for (const json& h : list) {
    const std::string w = "document.headings[" + std::to_string(doc->headings.size()) + "]";
    if (!h.is_object()) return InvalidArgumentError(w + " is not an object");
    Heading heading;
    ELLM_RETURN_IF_ERROR(ReadField(h, "level", w, &heading.level));
    ELLM_RETURN_IF_ERROR(ReadField(h, "number", w, &heading.number));
    ELLM_RETURN_IF_ERROR(ReadField(h, "title", w, &heading.title));
    ELLM_RETURN_IF_ERROR(ReadField(h, "page", w, &heading.page));
    if (heading.level < 1 || heading.level > 9) {
      return InvalidArgumentError(w + ".level is not between 1 and 9");
    }
    // Page numbers increase (checked before), so a binary search finds it.
    auto page = std::lower_bound(doc->pages.begin(), doc->pages.end(), heading.page,
                                 [](const Page& p, int n) { return p.number < n; });
    const bool known = page != doc->pages.end() && page->number == heading.page;
    if (!known) return InvalidArgumentError(w + ".page is not a page of the document");
    doc->headings.push_back(std::move(heading));
  }
  return OkStatus();
}

}  // namespace

std::string RenderForModel(const Document& doc) {
  const bool paginated = doc.metadata.media_type == kMediaTypePdf || doc.pages.size() > 1;
  std::string out;
  for (const Page& page : doc.pages) {
    if (paginated) {
      if (!out.empty()) out += "\n";
      out += "[page " + std::to_string(page.number) + "]\n";
    }
    out += page.text;
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

std::string ToJson(const Document& doc, int indent) {
  const DocumentMetadata& m = doc.metadata;
  ordered_json j = {{"format", kFormat},
                    {"version", kVersion},
                    {"metadata",
                     {{"source", m.source},
                      {"media_type", m.media_type},
                      {"title", m.title},
                      {"author", m.author},
                      {"producer", m.producer},
                      {"page_count", m.page_count},
                      {"byte_size", m.byte_size},
                      {"sha256", m.sha256}}}};
  ordered_json pages = ordered_json::array();
  for (const Page& p : doc.pages) {
    ordered_json page = {{"number", p.number}, {"read_by", p.read_by}};
    if (p.read_by == kReadByOcr) {
      page["ocr_confidence"] = p.ocr_confidence;
      if (!p.ocr_note.empty()) page["ocr_note"] = p.ocr_note;
    }
    page["text"] = p.text;
    pages.push_back(std::move(page));
  }
  j["pages"] = std::move(pages);
  if (!doc.headings.empty()) {
    ordered_json headings = ordered_json::array();
    for (const Heading& h : doc.headings) {
      headings.push_back(
          {{"level", h.level}, {"number", h.number}, {"title", h.title}, {"page", h.page}});
    }
    j["headings"] = std::move(headings);
  }
  // Invalid UTF-8 cannot reach here from the extractor (text is normalised
  // first); replacing rather than throwing keeps this total anyway.
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace);
}

StatusOr<Document> DocumentFromJson(std::string_view text) {
  // Its size is the extractor's output, bounded by extract.max_output_bytes
  // (which may be set above kMaxJsonBytes); its depth is the child's to
  // respect like anyone's.
  StatusOr<json> parsed = ParseJson(text, {.max_bytes = std::numeric_limits<size_t>::max()});
  if (!parsed.ok()) return parsed.status().WithContext("document JSON");
  const json& j = *parsed;
  if (!j.is_object()) return InvalidArgumentError("document JSON is not an object");
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    return InvalidArgumentError("document JSON: \"format\" is not \"ellm.document\"");
  }
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != kVersion) {
    return InvalidArgumentError("document JSON: unsupported \"version\" (expected 1)");
  }
  Document doc;
  if (auto m = j.find("metadata"); m != j.end())
    ELLM_RETURN_IF_ERROR(ReadMetadata(*m, &doc.metadata));
  auto pages = j.find("pages");
  if (pages == j.end() || !pages->is_array()) {
    return InvalidArgumentError("document JSON: \"pages\" is missing or not an array");
  }
  int last = 0;
  for (const json& p : *pages) {
    const std::string w = "document.pages[" + std::to_string(doc.pages.size()) + "]";
    if (!p.is_object()) return InvalidArgumentError(w + " is not an object");
    Page page;
    ELLM_RETURN_IF_ERROR(ReadField(p, "number", w, &page.number));
    ELLM_RETURN_IF_ERROR(ReadField(p, "text", w, &page.text));
    ELLM_RETURN_IF_ERROR(ReadField(p, "read_by", w, &page.read_by));
    ELLM_RETURN_IF_ERROR(ReadField(p, "ocr_confidence", w, &page.ocr_confidence));
    ELLM_RETURN_IF_ERROR(ReadField(p, "ocr_note", w, &page.ocr_note));
    if (page.read_by != kReadByText && page.read_by != kReadByOcr) {
      return InvalidArgumentError(w + ".read_by is neither \"text\" nor \"ocr\"");
    }
    if (page.ocr_confidence < 0 || page.ocr_confidence > 100) {
      return InvalidArgumentError(w + ".ocr_confidence is not a percentage");
    }
    if (page.number <= last) {
      return InvalidArgumentError(w + ".number " + std::to_string(page.number) +
                                  " is not above the previous page's");
    }
    last = page.number;
    doc.pages.push_back(std::move(page));
  }
  if (auto h = j.find("headings"); h != j.end()) ELLM_RETURN_IF_ERROR(ReadHeadings(*h, &doc));
  return doc;
}

}  // namespace ellm::ingest
