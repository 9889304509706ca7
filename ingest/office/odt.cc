// OdtToDocument: content.xml's office:text walked in document order (see
// office_to_document.h). OpenDocument 1.3 Part 3, chapters 5 (paragraphs),
// 5.3 (lists), 9 (tables), 5.5 (tracked changes).
#include <pugixml.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "ellm/ingest/extract.h"
#include "office/office_text.h"
#include "office/office_to_document.h"
#include "office/xml_util.h"
#include "office/zip_reader.h"

namespace ellm::ingest::office {
namespace {

// How one level of a list style or of the outline (heading) style numbers.
struct LevelStyle {
  NumberFormat format = NumberFormat::kNone;
  std::string prefix, suffix;
  int display_levels = 1;
  int start = 1;
};
using ListStyle = std::array<LevelStyle, 10>;  // index = level 1..10 - 1

NumberFormat OdfFormat(std::string_view f) {
  if (f == "1") return NumberFormat::kDecimal;
  if (f == "a") return NumberFormat::kLowerLetter;
  if (f == "A") return NumberFormat::kUpperLetter;
  if (f == "i") return NumberFormat::kLowerRoman;
  if (f == "I") return NumberFormat::kUpperRoman;
  return NumberFormat::kNone;
}

void ReadLevels(const pugi::xml_node& style, ListStyle* out) {
  for (pugi::xml_node l : style.children()) {
    const std::string_view local = Local(l);
    if (local != "list-level-style-number" && local != "outline-level-style" &&
        local != "list-level-style-bullet") {
      continue;
    }
    const int level = Attr(l, "level").as_int(0);
    if (level < 1 || level > 10) continue;
    LevelStyle& s = (*out)[static_cast<size_t>(level - 1)];
    if (local == "list-level-style-bullet") continue;  // kNone: bullets carry no number
    s.format = OdfFormat(Attr(l, "num-format").value());
    s.prefix = Attr(l, "num-prefix").value();
    s.suffix = Attr(l, "num-suffix").value();
    s.display_levels = std::clamp(Attr(l, "display-levels").as_int(1), 1, level);
    s.start = Attr(l, "start-value").as_int(1);
  }
}

struct Counters {
  std::array<int, 10> value{};
  std::array<bool, 10> started{};
  // Advances level `level` (1-based) and returns its label ("2.1.").
  std::string Next(const ListStyle& style, int level, int start_override) {
    const size_t l = static_cast<size_t>(std::clamp(level, 1, 10) - 1);
    value[l] = start_override > 0 ? start_override : started[l] ? value[l] + 1 : style[l].start;
    started[l] = true;
    for (size_t d = l + 1; d < 10; ++d) started[d] = false;
    const LevelStyle& s = style[l];
    if (s.format == NumberFormat::kNone) return "";
    std::string label;
    for (size_t k = l + 1 - static_cast<size_t>(s.display_levels); k <= l; ++k) {
      if (!label.empty()) label += '.';
      label += FormatNumber(started[k] ? value[k] : style[k].start,
                            k == l                                   ? s.format
                            : style[k].format == NumberFormat::kNone ? NumberFormat::kDecimal
                                                                     : style[k].format);
    }
    return s.prefix + label + s.suffix;
  }
};

class OdtWalker {
 public:
  // `zip` and `image_text` (may be null): pictures read by OCR.
  OdtWalker(const std::string& name, std::map<std::string, ListStyle> lists, ListStyle outline,
            const ZipReader* zip = nullptr, const ImageTextFn* image_text = nullptr)
      : name_(name),
        lists_(std::move(lists)),
        outline_(outline),
        zip_(zip),
        image_text_(image_text) {}

  Status Text(const pugi::xml_node& n, int depth);
  DocumentBuilder& builder() { return builder_; }

 private:
  struct ListContext {
    std::string style;
    int level = 0;  // 0: not in a list
  };
  Status TooDeep() const {
    return MakeExtractError(
        ExtractError::kDamaged,
        name_ + ": its XML is nested more than " + std::to_string(kMaxXmlDepth) + " levels deep");
  }
  Status Block(const pugi::xml_node& c, int depth, const ListContext& list, int start);
  Status List(const pugi::xml_node& list, int depth, const ListContext& outer);
  Status Inline(const pugi::xml_node& n, int depth, bool breaks, std::vector<std::string>* out);
  Status Table(const pugi::xml_node& t, int depth);

  const std::string& name_;
  std::map<std::string, ListStyle> lists_;
  ListStyle outline_;
  std::map<std::string, Counters> list_counters_;
  Counters outline_counters_;
  DocumentBuilder builder_;
  const ZipReader* zip_;
  const ImageTextFn* image_text_;
  int images_read_ = 0;
  std::vector<std::string> pictures_;  // text of the pictures met, not yet placed

  // The text of frame `n`'s pictures (draw:image xlink:href into the
  // archive), to pictures_; then EmitPictures places them as paragraphs.
  void Pictures(const pugi::xml_node& n, int depth);
  void EmitPictures() {
    for (const std::string& p : pictures_) builder_.Paragraph(p);
    pictures_.clear();
  }
};

void OdtWalker::Pictures(const pugi::xml_node& n, int depth) {
  if (image_text_ == nullptr || !*image_text_ || depth > 32) return;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (Local(c) != "image") {
      Pictures(c, depth + 1);
      continue;
    }
    const std::string href = Attr(c, "href").value();
    if (href.empty() || href.find("://") != std::string::npos || href.rfind("../", 0) == 0 ||
        images_read_ >= kMaxImages) {
      continue;
    }
    ++images_read_;
    StatusOr<std::string> bytes =
        zip_->Read(href.front() == '/' ? href.substr(1) : href, kMaxPartBytes);
    if (!bytes.ok()) continue;
    std::string text = (*image_text_)(*bytes);
    if (!text.empty()) pictures_.push_back(std::move(text));
  }
}

bool DroppedInline(std::string_view local) {
  return local == "note" || local == "annotation" || local == "annotation-end" ||
         local == "change" || local == "change-start" || local == "change-end" ||
         local == "frame" || local == "tracked-changes" || local == "sequence-decls" ||
         local == "bookmark" || local == "bookmark-start" || local == "bookmark-end";
}

Status OdtWalker::Inline(const pugi::xml_node& n, int depth, bool breaks,
                         std::vector<std::string>* out) {
  if (depth > kMaxXmlDepth) return TooDeep();
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
      for (const char* p = c.value(); *p; ++p) {  // ODF collapses white space (6.1.2)
        out->back() += *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;
      }
      continue;
    }
    if (c.type() != pugi::node_element) continue;
    const std::string_view local = Local(c);
    if (local == "frame") {
      Pictures(c, 0);
      continue;
    }
    if (DroppedInline(local) || local == "number") continue;
    if (local == "s") {
      out->back().append(static_cast<size_t>(std::clamp(Attr(c, "c").as_int(1), 1, 1000)), ' ');
    } else if (local == "tab") {
      out->back() += ' ';
    } else if (local == "line-break") {
      out->back() += '\n';
    } else if (local == "soft-page-break") {
      if (breaks) out->emplace_back();
    } else {
      ELLM_RETURN_IF_ERROR(Inline(c, depth + 1, breaks, out));  // span, a, meta, ruby, ...
    }
  }
  return OkStatus();
}

Status OdtWalker::Block(const pugi::xml_node& c, int depth, const ListContext& list, int start) {
  const std::string_view local = Local(c);
  std::vector<std::string> pieces(1);
  ELLM_RETURN_IF_ERROR(Inline(c, depth + 1, true, &pieces));
  std::string number;
  int level = 0;
  if (local == "h") {
    level = std::clamp(Attr(c, "outline-level").as_int(1), 1, 9);
    if (pugi::xml_node shown = Child(c, "number")) {
      number = NodeText(shown);
    } else if (list.level == 0 && !Attr(c, "is-list-header").as_bool(false)) {
      number = outline_counters_.Next(outline_, level, 0);
    }
  }
  if (list.level > 0 && number.empty()) {
    auto style = lists_.find(list.style);
    if (style != lists_.end()) {
      number = list_counters_[list.style].Next(style->second, list.level, start);
    }
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) builder_.PageBreak();
    if (i == 0 && level > 0) {
      builder_.Heading(level, number, pieces[0]);
    } else {
      builder_.Paragraph(i == 0 && !number.empty() ? number + " " + pieces[0] : pieces[i]);
    }
  }
  EmitPictures();
  return OkStatus();
}

Status OdtWalker::List(const pugi::xml_node& list, int depth, const ListContext& outer) {
  if (depth > kMaxXmlDepth) return TooDeep();
  ListContext inner{outer.style, outer.level + 1};
  if (pugi::xml_attribute s = Attr(list, "style-name")) inner.style = s.value();
  const bool continues = Attr(list, "continue-numbering").as_bool(false) ||
                         Attr(list, "continue-list") || inner.level > 1;
  if (!continues) list_counters_.erase(inner.style);
  for (pugi::xml_node item = list.first_child(); item; item = item.next_sibling()) {
    if (Local(item) != "list-item" && Local(item) != "list-header") continue;
    bool header = Local(item) == "list-header";
    int start = Attr(item, "start-value").as_int(0);
    for (pugi::xml_node c = item.first_child(); c; c = c.next_sibling()) {
      const std::string_view local = Local(c);
      if (local == "list") {
        ELLM_RETURN_IF_ERROR(List(c, depth + 2, inner));
      } else if (local == "p" || local == "h") {
        // Only an item's first paragraph carries its number.
        ELLM_RETURN_IF_ERROR(Block(c, depth + 2, header ? ListContext{} : inner, start));
        header = true;
        start = 0;
      } else {
        ELLM_RETURN_IF_ERROR(Text(c, depth + 2));
      }
    }
  }
  return OkStatus();
}

Status OdtWalker::Table(const pugi::xml_node& t, int depth) {
  if (depth > kMaxXmlDepth) return TooDeep();
  for (pugi::xml_node row = t.first_child(); row; row = row.next_sibling()) {
    const std::string_view local = Local(row);
    if (local == "table-header-rows" || local == "table-rows" || local == "table-row-group") {
      ELLM_RETURN_IF_ERROR(Table(row, depth + 1));
      continue;
    }
    if (local != "table-row") continue;
    std::vector<std::string> cells;
    for (pugi::xml_node cell = row.first_child(); cell; cell = cell.next_sibling()) {
      if (Local(cell) != "table-cell") continue;  // covered-table-cell: merged away
      std::vector<std::string> text(1);
      for (pugi::xml_node p = cell.first_child(); p; p = p.next_sibling()) {
        if (!text.back().empty()) text.back() += ' ';
        ELLM_RETURN_IF_ERROR(Inline(p, depth + 3, false, &text));
      }
      cells.push_back(std::move(text.back()));
    }
    builder_.TableRow(cells);
  }
  EmitPictures();  // pictures in cells follow the table
  return OkStatus();
}

Status OdtWalker::Text(const pugi::xml_node& n, int depth) {
  if (depth > kMaxXmlDepth) return TooDeep();
  const std::string_view local = Local(n);
  if (local == "p" || local == "h") return Block(n, depth, {}, 0);
  if (local == "list") return List(n, depth, {});
  if (local == "table") return Table(n, depth);
  if (local == "soft-page-break") {
    builder_.PageBreak();
    return OkStatus();
  }
  if (local == "frame") {  // anchored to the page
    Pictures(n, 0);
    EmitPictures();
    return OkStatus();
  }
  if (DroppedInline(local) || local == "table-of-content" || local == "forms") return OkStatus();
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element) ELLM_RETURN_IF_ERROR(Text(c, depth + 1));
  }
  return OkStatus();  // section, text, body, ...
}

// Every list style in `doc`, by name, and its outline style if it has one.
void ReadStyles(const pugi::xml_document& doc, std::map<std::string, ListStyle>* lists,
                ListStyle* outline) {
  pugi::xml_node root = doc.first_child();
  for (pugi::xml_node group : root.children()) {
    if (Local(group) != "styles" && Local(group) != "automatic-styles") continue;
    for (pugi::xml_node s : group.children()) {
      if (Local(s) == "list-style") ReadLevels(s, &(*lists)[Attr(s, "name").value()]);
      if (Local(s) == "outline-style") ReadLevels(s, outline);
    }
  }
}

}  // namespace

StatusOr<Document> OdtToDocument(const std::string& bytes, const std::string& name,
                                 const ImageTextFn& image_text) {
  ELLM_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Open(bytes, name));
  pugi::xml_document manifest, styles, content, meta;
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "META-INF/manifest.xml", &manifest));
  for (pugi::xml_node e : Child(manifest, "manifest").children()) {
    if (Child(e, "encryption-data")) {
      return MakeExtractError(ExtractError::kEncrypted,
                              name + ": the OpenDocument file is password-protected");
    }
  }
  if (!zip.Has("content.xml")) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": an OpenDocument file without its content.xml part");
  }
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "styles.xml", &styles));
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "content.xml", &content));
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "meta.xml", &meta));
  std::map<std::string, ListStyle> lists;
  ListStyle outline;
  ReadStyles(styles, &lists, &outline);
  ReadStyles(content, &lists, &outline);
  OdtWalker walker(name, std::move(lists), outline, &zip, image_text ? &image_text : nullptr);
  const pugi::xml_node body = Child(Child(content, "document-content"), "body");
  ELLM_RETURN_IF_ERROR(walker.Text(Child(body, "text"), 0));
  if (walker.builder().empty()) {
    return MakeExtractError(ExtractError::kNoTextLayer,
                            name + ": the OpenDocument file holds no text (only images?)");
  }
  Document doc = walker.builder().Finish(kMediaTypeOdt);
  const pugi::xml_node m = Child(Child(meta, "document-meta"), "meta");
  doc.metadata.title = NodeText(Child(m, "title"));
  doc.metadata.author = NodeText(Child(m, "initial-creator"));
  if (doc.metadata.author.empty()) doc.metadata.author = NodeText(Child(m, "creator"));
  doc.metadata.producer = NodeText(Child(m, "generator"));
  return doc;
}

}  // namespace ellm::ingest::office
