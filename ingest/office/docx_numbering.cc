// See docx_numbering.h.
#include "office/docx_numbering.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "office/office_text.h"
#include "office/xml_util.h"

namespace ellm::ingest::office {
namespace {

int IntAttr(const pugi::xml_node& n, int fallback) {
  pugi::xml_attribute a = Attr(n, "val");
  if (!a) return fallback;
  const long v = std::strtol(a.value(), nullptr, 10);
  return v < -1 || v > 1'000'000 ? fallback : static_cast<int>(v);
}

NumberingRef ReadNumPr(const pugi::xml_node& num_pr) {
  NumberingRef ref;
  ref.num_id = IntAttr(Child(num_pr, "numId"), 0);
  ref.ilvl = std::clamp(IntAttr(Child(num_pr, "ilvl"), 0), 0, 8);
  return ref;
}

NumberFormat FormatOf(const std::string& f) {
  if (f == "lowerLetter") return NumberFormat::kLowerLetter;
  if (f == "upperLetter") return NumberFormat::kUpperLetter;
  if (f == "lowerRoman") return NumberFormat::kLowerRoman;
  if (f == "upperRoman") return NumberFormat::kUpperRoman;
  if (f == "bullet" || f == "none") return NumberFormat::kNone;
  return NumberFormat::kDecimal;  // decimal, decimalZero and the rest
}

}  // namespace

WordStyles::WordStyles(const pugi::xml_document& doc) {
  for (pugi::xml_node s : Child(doc, "styles").children()) {
    if (Local(s) != "style") continue;
    Style style;
    for (char c : std::string(Attr(Child(s, "name"), "val").value())) {
      style.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    style.based_on = Attr(Child(s, "basedOn"), "val").value();
    pugi::xml_node ppr = Child(s, "pPr");
    style.outline_level = IntAttr(Child(ppr, "outlineLvl"), -1);
    if (pugi::xml_node num_pr = Child(ppr, "numPr")) {
      style.numbering = ReadNumPr(num_pr);
      style.has_numbering = true;
    }
    styles_[Attr(s, "styleId").value()] = std::move(style);
  }
}

const WordStyles::Style* WordStyles::Find(const std::string& id) const {
  auto it = styles_.find(id);
  return it == styles_.end() ? nullptr : &it->second;
}

int WordStyles::HeadingLevel(const std::string& style_id, int own_outline_level) const {
  if (own_outline_level >= 0) return own_outline_level < 9 ? own_outline_level + 1 : 0;
  std::string id = style_id;
  for (int hops = 0; hops < 16 && !id.empty(); ++hops) {  // basedOn chains may loop
    const Style* s = Find(id);
    if (s == nullptr) break;
    if (s->outline_level >= 0) return s->outline_level < 9 ? s->outline_level + 1 : 0;
    if (s->name.rfind("heading ", 0) == 0 && s->name.size() == 9 && s->name[8] >= '1' &&
        s->name[8] <= '9') {
      return s->name[8] - '0';
    }
    id = s->based_on;
  }
  return 0;
}

NumberingRef WordStyles::StyleNumbering(const std::string& style_id) const {
  std::string id = style_id;
  for (int hops = 0; hops < 16 && !id.empty(); ++hops) {
    const Style* s = Find(id);
    if (s == nullptr) break;
    if (s->has_numbering) return s->numbering;
    id = s->based_on;
  }
  return {};
}

WordNumbering::WordNumbering(const pugi::xml_document& doc) {
  pugi::xml_node root = Child(doc, "numbering");
  for (pugi::xml_node n : root.children()) {
    if (Local(n) == "abstractNum") {
      Abstract a;
      for (pugi::xml_node lvl : n.children()) {
        if (Local(lvl) != "lvl") continue;
        const long i = std::strtol(Attr(lvl, "ilvl").value(), nullptr, 10);
        if (i < 0 || i > 8) continue;
        Level& level = a.levels[static_cast<size_t>(i)];
        level.start = IntAttr(Child(lvl, "start"), 1);
        level.format = Attr(Child(lvl, "numFmt"), "val").value();
        level.text = Attr(Child(lvl, "lvlText"), "val").value();
      }
      abstracts_[static_cast<int>(std::strtol(Attr(n, "abstractNumId").value(), nullptr, 10))] = a;
    } else if (Local(n) == "num") {
      const int id = static_cast<int>(std::strtol(Attr(n, "numId").value(), nullptr, 10));
      num_to_abstract_[id] = IntAttr(Child(n, "abstractNumId"), -1);
      for (pugi::xml_node o : n.children()) {
        if (Local(o) != "lvlOverride" || !Child(o, "startOverride")) continue;
        const long i = std::strtol(Attr(o, "ilvl").value(), nullptr, 10);
        if (i >= 0 && i <= 8) {
          start_overrides_[id][static_cast<int>(i)] = IntAttr(Child(o, "startOverride"), 1);
        }
      }
    }
  }
}

std::string WordNumbering::Next(const NumberingRef& ref) {
  auto num = num_to_abstract_.find(ref.num_id);
  if (num == num_to_abstract_.end()) return "";
  auto abs = abstracts_.find(num->second);
  if (abs == abstracts_.end()) return "";
  const Abstract& a = abs->second;
  // Lists sharing an abstract definition continue each other's counting,
  // unless one restarts it with a start override.
  auto overrides = start_overrides_.find(ref.num_id);
  const bool own = overrides != start_overrides_.end();
  Counters& c =
      counters_[own ? "n" + std::to_string(ref.num_id) : "a" + std::to_string(num->second)];
  auto start_of = [&](int i) {
    if (own) {
      auto o = overrides->second.find(i);
      if (o != overrides->second.end()) return o->second;
    }
    return a.levels[static_cast<size_t>(i)].start;
  };
  const int l = ref.ilvl;
  c.value[l] = c.started[l] ? c.value[l] + 1 : start_of(l);
  c.started[l] = true;
  for (int deeper = l + 1; deeper < 9; ++deeper) c.started[deeper] = false;
  if (FormatOf(a.levels[l].format) == NumberFormat::kNone) return "";
  std::string out;
  const std::string& pattern = a.levels[l].text;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] >= '1' &&
        pattern[i + 1] <= '9') {
      const int k = pattern[++i] - '1';
      const int v = c.started[k] ? c.value[k] : start_of(k);
      out += FormatNumber(v, FormatOf(a.levels[k].format));
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace ellm::ingest::office
