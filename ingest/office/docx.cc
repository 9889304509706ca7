// DocxToDocument: word/document.xml walked in document order (see
// office_to_document.h). WordprocessingML reference: ECMA-376 Part 1, 17.
#include <pugixml.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ellm/ingest/extract.h"
#include "office/docx_numbering.h"
#include "office/office_text.h"
#include "office/office_to_document.h"
#include "office/xml_util.h"
#include "office/zip_reader.h"

namespace ellm::ingest::office {
namespace {

// One paragraph's text, split where it breaks the page, and the text of
// the images in it.
struct ParagraphText {
  std::vector<std::string> pieces{""};
  std::vector<std::string> images;
};

// Where the main part's relationships point (rId -> ZIP entry), for images.
std::map<std::string, std::string> ReadRelationships(const pugi::xml_document& rels) {
  std::map<std::string, std::string> out;
  for (pugi::xml_node r = Child(rels, "Relationships").first_child(); r; r = r.next_sibling()) {
    if (Local(r) != "Relationship" || std::string_view(Attr(r, "TargetMode").value()) == "External")
      continue;
    std::string target = Attr(r, "Target").value();
    if (target.empty()) continue;
    target = target.front() == '/' ? target.substr(1) : "word/" + target;
    out[Attr(r, "Id").value()] = target;
  }
  return out;
}

// The images a drawing or picture shows, by relationship id: a:blip's
// r:embed (DrawingML) and v:imagedata's r:id (VML). Bounded depth.
void ImageIds(const pugi::xml_node& n, int depth, std::vector<std::string>* ids) {
  if (depth > 32) return;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view local = Local(c);
    if (local == "blip") {
      if (pugi::xml_attribute a = Attr(c, "embed")) ids->push_back(a.value());
    } else if (local == "imagedata") {
      if (pugi::xml_attribute a = Attr(c, "id")) ids->push_back(a.value());
    } else {
      ImageIds(c, depth + 1, ids);
    }
  }
}

struct Images {
  const ZipReader* zip = nullptr;
  std::map<std::string, std::string> targets;  // rId -> ZIP entry
  const ImageTextFn* text = nullptr;
  int read = 0;  // images given to `text` so far (kMaxImages at most)
};

class DocxWalker {
 public:
  DocxWalker(const std::string& name, const WordStyles& styles, WordNumbering* numbering,
             Images* images)
      : name_(name), styles_(styles), numbering_(numbering), images_(images) {}

  Status Body(const pugi::xml_node& body, int depth);
  DocumentBuilder& builder() { return builder_; }

 private:
  Status TooDeep() const {
    return MakeExtractError(
        ExtractError::kDamaged,
        name_ + ": its XML is nested more than " + std::to_string(kMaxXmlDepth) + " levels deep");
  }
  Status Paragraph(const pugi::xml_node& p, int depth);
  Status Runs(const pugi::xml_node& n, int depth, bool breaks, ParagraphText* out);
  Status Table(const pugi::xml_node& tbl, int depth);
  Status CellText(const pugi::xml_node& n, int depth, std::string* out);

  // The text of the images of drawing or picture `n`, to out->images.
  void ImageText(const pugi::xml_node& n, ParagraphText* out);

  const std::string& name_;
  const WordStyles& styles_;
  WordNumbering* numbering_;
  Images* images_;
  DocumentBuilder builder_;
};

void DocxWalker::ImageText(const pugi::xml_node& n, ParagraphText* out) {
  if (images_ == nullptr || images_->text == nullptr || !*images_->text) return;
  std::vector<std::string> ids;
  ImageIds(n, 0, &ids);
  for (const std::string& id : ids) {
    auto target = images_->targets.find(id);
    if (target == images_->targets.end() || images_->read >= kMaxImages) continue;
    ++images_->read;
    StatusOr<std::string> bytes = images_->zip->Read(target->second, kMaxPartBytes);
    if (!bytes.ok()) continue;  // an image too large or damaged: the text goes on without it
    std::string text = (*images_->text)(*bytes);
    if (!text.empty()) out->images.push_back(std::move(text));
  }
}

// Elements whose content is not part of the accepted text.
bool Dropped(std::string_view local) {
  return local == "del" || local == "moveFrom" || local == "instrText" || local == "delText" ||
         local == "pPr" || local == "rPr" || local == "tblPr" || local == "trPr" ||
         local == "tcPr" || local == "sectPr" || local == "commentReference" ||
         local == "footnoteReference" || local == "endnoteReference" || local == "drawing" ||
         local == "pict" || local == "AlternateContent" || local == "object";
}

Status DocxWalker::Runs(const pugi::xml_node& n, int depth, bool breaks, ParagraphText* out) {
  if (depth > kMaxXmlDepth) return TooDeep();
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view local = Local(c);
    if (local == "drawing" || local == "pict") {
      ImageText(c, out);
      continue;
    }
    if (Dropped(local)) continue;
    if (local == "t") {
      out->pieces.back() += NodeText(c);
    } else if (local == "tab" || local == "ptab") {
      out->pieces.back() += ' ';
    } else if (local == "noBreakHyphen") {
      out->pieces.back() += '-';
    } else if (local == "br" || local == "cr") {
      const std::string type = Attr(c, "type").value();
      if (type == "page" && breaks) {
        out->pieces.emplace_back();
      } else {
        out->pieces.back() += type == "page" || type == "column" ? ' ' : '\n';
      }
    } else if (local == "lastRenderedPageBreak") {
      if (breaks) out->pieces.emplace_back();
    } else {
      // r, ins, moveTo, hyperlink, smartTag, fldSimple, sdt, sdtContent, ...
      ELLM_RETURN_IF_ERROR(Runs(c, depth + 1, breaks, out));
    }
  }
  return OkStatus();
}

Status DocxWalker::Paragraph(const pugi::xml_node& p, int depth) {
  const pugi::xml_node ppr = Child(p, "pPr");
  if (Child(ppr, "pageBreakBefore")) builder_.PageBreak();
  const std::string style = Attr(Child(ppr, "pStyle"), "val").value();
  pugi::xml_attribute own_level = Attr(Child(ppr, "outlineLvl"), "val");
  const int level = styles_.HeadingLevel(style, own_level ? own_level.as_int(-1) : -1);
  NumberingRef ref = styles_.StyleNumbering(style);
  if (pugi::xml_node num_pr = Child(ppr, "numPr")) {
    ref.num_id = Attr(Child(num_pr, "numId"), "val").as_int(0);
    ref.ilvl = std::clamp(Attr(Child(num_pr, "ilvl"), "val").as_int(0), 0, 8);
  }
  ParagraphText text;
  ELLM_RETURN_IF_ERROR(Runs(p, depth + 1, true, &text));
  const std::string number = ref.num_id > 0 ? numbering_->Next(ref) : "";
  for (size_t i = 0; i < text.pieces.size(); ++i) {
    if (i > 0) builder_.PageBreak();
    if (i == 0 && level > 0) {
      builder_.Heading(level, number, text.pieces[0]);
    } else if (i == 0 && !number.empty()) {
      builder_.Paragraph(number + " " + text.pieces[0]);
    } else {
      builder_.Paragraph(text.pieces[i]);
    }
  }
  for (const std::string& image : text.images) builder_.Paragraph(image);
  return OkStatus();
}

Status DocxWalker::CellText(const pugi::xml_node& n, int depth, std::string* out) {
  if (depth > kMaxXmlDepth) return TooDeep();
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element || Dropped(Local(c))) continue;
    if (Local(c) == "p") {
      ParagraphText text;
      ELLM_RETURN_IF_ERROR(Runs(c, depth + 1, false, &text));
      if (!out->empty() && !text.pieces[0].empty()) *out += ' ';
      *out += text.pieces[0];
    } else {
      ELLM_RETURN_IF_ERROR(CellText(c, depth + 1, out));  // nested tables, sdt
    }
  }
  return OkStatus();
}

Status DocxWalker::Table(const pugi::xml_node& tbl, int depth) {
  if (depth > kMaxXmlDepth) return TooDeep();
  for (pugi::xml_node tr = tbl.first_child(); tr; tr = tr.next_sibling()) {
    if (Local(tr) != "tr" || Child(Child(tr, "trPr"), "del")) continue;  // deleted rows
    std::vector<std::string> cells;
    for (pugi::xml_node tc = tr.first_child(); tc; tc = tc.next_sibling()) {
      if (Local(tc) != "tc") continue;
      cells.emplace_back();
      ELLM_RETURN_IF_ERROR(CellText(tc, depth + 2, &cells.back()));
    }
    builder_.TableRow(cells);
  }
  return OkStatus();
}

Status DocxWalker::Body(const pugi::xml_node& body, int depth) {
  if (depth > kMaxXmlDepth) return TooDeep();
  for (pugi::xml_node c = body.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view local = Local(c);
    if (local == "p") {
      ELLM_RETURN_IF_ERROR(Paragraph(c, depth + 1));
    } else if (local == "tbl") {
      ELLM_RETURN_IF_ERROR(Table(c, depth + 1));
    } else if (!Dropped(local)) {
      ELLM_RETURN_IF_ERROR(Body(c, depth + 1));  // sdt, sdtContent, ins, customXml
    }
  }
  return OkStatus();
}

void ReadMetadata(const pugi::xml_document& core, const pugi::xml_document& app,
                  DocumentMetadata* meta) {
  pugi::xml_node props = Child(core, "coreProperties");
  meta->title = NodeText(Child(props, "title"));
  meta->author = NodeText(Child(props, "creator"));
  meta->producer = NodeText(Child(Child(app, "Properties"), "Application"));
}

}  // namespace

StatusOr<Document> DocxToDocument(const std::string& bytes, const std::string& name,
                                  const ImageTextFn& image_text) {
  ELLM_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Open(bytes, name));
  const std::string main = "word/document.xml";
  if (!zip.Has(main)) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": a Word file without its " + main + " part");
  }
  pugi::xml_document styles_xml, numbering_xml, core, app, document;
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "word/styles.xml", &styles_xml));
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "word/numbering.xml", &numbering_xml));
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "docProps/core.xml", &core));
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "docProps/app.xml", &app));
  ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, main, &document));
  const WordStyles styles(styles_xml);
  WordNumbering numbering(numbering_xml);
  Images images;
  if (image_text) {
    pugi::xml_document rels;
    ELLM_RETURN_IF_ERROR(ParseOptionalPart(zip, name, "word/_rels/document.xml.rels", &rels));
    images = {&zip, ReadRelationships(rels), &image_text, 0};
  }
  DocxWalker walker(name, styles, &numbering, &images);
  ELLM_RETURN_IF_ERROR(walker.Body(Child(Child(document, "document"), "body"), 0));
  if (walker.builder().empty()) {
    return MakeExtractError(ExtractError::kNoTextLayer,
                            name + ": the Word file holds no text (only images or objects?)");
  }
  Document doc = walker.builder().Finish(kMediaTypeDocx);
  ReadMetadata(core, app, &doc.metadata);
  return doc;
}

}  // namespace ellm::ingest::office
