// HTML bytes -> Document (see html.h): libxml2's HTML parser (forgiving,
// as browsers are), then one walk over the tree.
#include "office/html.h"

#include <libxml/HTMLparser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/ingest/extract.h"
#include "office/office_text.h"
#include "text/normalize.h"

namespace ellm::ingest::office {
namespace {

struct DocDeleter {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whitespace runs as one space, none at the ends (HTML's own rule).
std::string Collapse(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string_view Name(const xmlNode* n) {
  return n->name ? std::string_view(reinterpret_cast<const char*>(n->name)) : std::string_view();
}

bool Is(const xmlNode* n, std::initializer_list<std::string_view> names) {
  const std::string name = Lower(Name(n));
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool HasAttribute(const xmlNode* n, const char* attr) {
  return xmlHasProp(n, reinterpret_cast<const xmlChar*>(attr)) != nullptr;
}

std::string Attribute(const xmlNode* n, const char* attr) {
  xmlChar* v = xmlGetProp(n, reinterpret_cast<const xmlChar*>(attr));
  if (v == nullptr) return "";
  std::string out(reinterpret_cast<const char*>(v));
  xmlFree(v);
  return out;
}

// Elements whose content is not read: code, styling, embedded objects,
// forms' machinery, site navigation, and what the author hid.
bool Skipped(const xmlNode* n) {
  if (Is(n, {"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object",
             "embed", "canvas", "select", "button", "datalist", "map", "nav"})) {
    return true;
  }
  return HasAttribute(n, "hidden") || Lower(Attribute(n, "aria-hidden")) == "true";
}

// Block-level elements: each ends the paragraph before it and its own.
bool IsBlock(const xmlNode* n) {
  return Is(n, {"p",     "div",  "section",  "article",    "main",    "header",  "footer",
                "aside", "nav",  "address",  "blockquote", "pre",     "figure",  "figcaption",
                "ul",    "ol",   "dl",       "dt",         "dd",      "li",      "hr",
                "br",    "form", "fieldset", "legend",     "details", "summary", "caption",
                "body",  "html", "center"});
}

// Text of a subtree, all inline (a table cell, a heading), bounded.
void InlineText(const xmlNode* n, int depth, std::string* out) {
  if (depth > kMaxXmlDepth || out->size() > (size_t{1} << 20)) return;
  for (const xmlNode* c = n->children; c != nullptr; c = c->next) {
    if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
      if (c->content) out->append(reinterpret_cast<const char*>(c->content));
    } else if (c->type == XML_ELEMENT_NODE && !Skipped(c)) {
      if (IsBlock(c) || Is(c, {"td", "th"})) out->push_back(' ');
      InlineText(c, depth + 1, out);
      if (IsBlock(c) || Is(c, {"td", "th"})) out->push_back(' ');
    }
  }
}

class Walker {
 public:
  explicit Walker(DocumentBuilder* out) : out_(out) {}

  void Walk(const xmlNode* n, int depth) {
    if (depth > kMaxXmlDepth) return;  // deeper content is dropped, not recursed into
    for (const xmlNode* c = n->children; c != nullptr; c = c->next) {
      if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
        if (c->content) text_ += reinterpret_cast<const char*>(c->content);
        continue;
      }
      if (c->type != XML_ELEMENT_NODE || Skipped(c)) continue;
      Element(c, depth);
    }
  }

  void Flush() {
    // Source line breaks and indentation are spaces in HTML.
    out_->Paragraph(Collapse(text_));
    text_.clear();
  }

 private:
  void Element(const xmlNode* c, int depth) {
    const std::string name = Lower(Name(c));
    if (name.size() == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6') {
      Flush();
      std::string title;
      InlineText(c, depth + 1, &title);
      out_->Heading(name[1] - '0', "", Collapse(title));
      return;
    }
    if (name == "table") {
      Flush();
      Table(c, depth + 1);
      return;
    }
    if (!IsBlock(c)) {
      Walk(c, depth + 1);  // inline: its text joins the paragraph
      return;
    }
    Flush();
    if (name == "li") text_ = ListMarker(c);
    Walk(c, depth + 1);
    Flush();
  }

  // "- " in a bulleted list, "3. " for the third item of a numbered one.
  static std::string ListMarker(const xmlNode* li) {
    const xmlNode* list = li->parent;
    if (list == nullptr || !Is(list, {"ol"})) return "- ";
    int n = 1;
    const std::string start = Attribute(list, "start");
    if (!start.empty() && start.size() < 6 &&
        std::all_of(start.begin(), start.end(), [](char ch) { return std::isdigit(ch); })) {
      n = std::stoi(start);
    }
    for (const xmlNode* s = list->children; s != nullptr && s != li; s = s->next) {
      if (s->type == XML_ELEMENT_NODE && Is(s, {"li"})) ++n;
    }
    return std::to_string(n) + ". ";
  }

  // Rows of this table (thead, tbody, tfoot or directly), cells as text;
  // a table nested in a cell is that cell's text.
  void Table(const xmlNode* table, int depth) {
    std::vector<const xmlNode*> rows;
    for (const xmlNode* c = table->children; c != nullptr; c = c->next) {
      if (c->type != XML_ELEMENT_NODE) continue;
      if (Is(c, {"tr"})) rows.push_back(c);
      if (Is(c, {"thead", "tbody", "tfoot"})) {
        for (const xmlNode* r = c->children; r != nullptr; r = r->next) {
          if (r->type == XML_ELEMENT_NODE && Is(r, {"tr"})) rows.push_back(r);
        }
      }
      if (Is(c, {"caption"})) {
        std::string caption;
        InlineText(c, depth + 1, &caption);
        out_->Paragraph(caption);
      }
    }
    for (const xmlNode* r : rows) {
      std::vector<std::string> cells;
      for (const xmlNode* cell = r->children; cell != nullptr; cell = cell->next) {
        if (cell->type != XML_ELEMENT_NODE || !Is(cell, {"td", "th"}) || Skipped(cell)) continue;
        std::string text;
        InlineText(cell, depth + 2, &text);
        cells.push_back(Collapse(text));
      }
      if (!cells.empty()) out_->TableRow(cells);
    }
    out_->Paragraph("");  // ends the table
  }

  DocumentBuilder* out_;
  std::string text_;
};

const xmlNode* Find(const xmlNode* n, std::string_view name, int depth) {
  if (n == nullptr || depth > kMaxXmlDepth) return nullptr;
  for (const xmlNode* c = n->children; c != nullptr; c = c->next) {
    if (c->type != XML_ELEMENT_NODE) continue;
    if (Lower(Name(c)) == name) return c;
    if (const xmlNode* found = Find(c, name, depth + 1)) return found;
  }
  return nullptr;
}

}  // namespace

StatusOr<Document> HtmlToDocument(const std::string& bytes, const std::string& name) {
  if (bytes.size() > static_cast<size_t>(kMaxPartBytes)) {
    return MakeExtractError(
        ExtractError::kResourceLimit,
        name + ": an HTML file above " + std::to_string(kMaxPartBytes >> 20) + " MiB");
  }
  // UTF-8 unless the page says otherwise (a <meta charset>, which libxml2
  // reads when no encoding is given).
  const char* encoding = text::IsValidUtf8(bytes) ? "UTF-8" : nullptr;
  std::unique_ptr<xmlDoc, DocDeleter> doc(
      htmlReadMemory(bytes.data(), static_cast<int>(bytes.size()), nullptr, encoding,
                     HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                         HTML_PARSE_NONET | HTML_PARSE_NOBLANKS));
  const xmlNode* root = doc ? xmlDocGetRootElement(doc.get()) : nullptr;
  if (root == nullptr) {
    return MakeExtractError(ExtractError::kDamaged, name + ": HTML that cannot be parsed");
  }
  DocumentBuilder builder;
  Walker walker(&builder);
  const xmlNode* body = Find(root, "body", 0);
  // The walk starts at the root's children: wrap it to walk the root itself.
  xmlNode wrapper{};
  wrapper.children = const_cast<xmlNode*>(body ? body : root);
  walker.Walk(&wrapper, 0);
  walker.Flush();
  if (builder.empty()) {
    return MakeExtractError(ExtractError::kNoTextLayer, name + ": an HTML page with no text");
  }
  Document out = builder.Finish(kMediaTypeHtml);
  if (const xmlNode* title = Find(root, "title", 0)) {
    std::string t;
    InlineText(title, 0, &t);
    out.metadata.title = Collapse(text::NormalizeText(t));
  }
  return out;
}

}  // namespace ellm::ingest::office
