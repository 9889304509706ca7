// ReadPdfOutline over poppler's core API (see pdf_outline.h).
#include "pdf/pdf_outline.h"

#include <Link.h>
#include <Outline.h>
#include <PDFDoc.h>
#include <Stream.h>

#include <memory>

#include "text/normalize.h"

namespace ellm::ingest::pdf {
namespace {

void AppendUtf8(Unicode c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x110000) {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// One line: NFC, every run of white space or control characters one space.
std::string Title(const OutlineItem& item) {
  std::string raw;
  const Unicode* u = item.getTitle();
  for (int i = 0; u != nullptr && i < item.getTitleLength() && i < 1000; ++i) {
    AppendUtf8(u[i] < 0x20 ? ' ' : u[i], &raw);
  }
  std::string title;
  for (char c : text::NormalizeText(raw)) {
    if (c == '\n') c = ' ';
    if (c == ' ' && (title.empty() || title.back() == ' ')) continue;
    title.push_back(c);
  }
  while (!title.empty() && title.back() == ' ') title.pop_back();
  return title;
}

int PageOf(PDFDoc* doc, const OutlineItem& item) {
  const LinkAction* action = item.getAction();
  if (action == nullptr || action->getKind() != actionGoTo) return 0;
  const auto* go_to = static_cast<const LinkGoTo*>(action);
  std::unique_ptr<LinkDest> named;
  const LinkDest* dest = go_to->getDest();
  if (dest == nullptr && go_to->getNamedDest() != nullptr) {
    named = doc->findDest(go_to->getNamedDest());
    dest = named.get();
  }
  if (dest == nullptr || !dest->isOk()) return 0;
  const int page = dest->isPageRef() ? doc->findPage(dest->getPageRef()) : dest->getPageNum();
  return page >= 1 && page <= doc->getNumPages() ? page : 0;
}

void Walk(PDFDoc* doc, const std::vector<OutlineItem*>* items, int level,
          std::vector<OutlineEntry>* out) {
  if (items == nullptr || level > kMaxOutlineDepth) return;
  for (OutlineItem* item : *items) {
    if (out->size() >= kMaxOutlineEntries) return;
    if (item == nullptr) continue;
    std::string title = Title(*item);
    if (!title.empty()) out->push_back({level, std::move(title), PageOf(doc, *item)});
    if (item->hasKids() && level < kMaxOutlineDepth) {
      item->open();  // poppler reads the kids once and guards against loops
      Walk(doc, item->getKids(), level + 1, out);
    }
  }
}

}  // namespace

std::vector<OutlineEntry> ReadPdfOutline(const std::string& bytes) {
  std::vector<OutlineEntry> out;
  // MemStream reads `bytes` in place; PDFDoc owns the stream, not the buffer.
  auto* stream =
      new MemStream(bytes.data(), 0, static_cast<Goffset>(bytes.size()), Object(objNull));
  PDFDoc doc(stream);
  if (!doc.isOk()) return out;
  Outline* outline = doc.getOutline();
  if (outline == nullptr) return out;
  Walk(&doc, outline->getItems(), 1, &out);
  return out;
}

}  // namespace ellm::ingest::pdf
