#include "ellm/pipelines/provenance.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

namespace ellm::pipelines {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string PagesText(const std::set<int>& pages) {
  std::string s;
  for (int p : pages) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

// Escapes a table cell's pipes and line breaks.
std::string Cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// Lowercased, every whitespace run one space: PDF text breaks names over
// lines.
std::string Collapse(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// The role word the text around one occurrence gives it: after it
// "(the Buyer)", "(hereinafter referred to as "the Supplier")",
// ", as Seller"; before it "Buyer: ". Empty: none.
std::vector<std::string> RoleWordsAround(const std::string& hay, size_t begin, size_t end) {
  static const std::string kQuote = R"((?:"|“|'|‘)?)";
  static const std::regex kParen(
      R"(^\s*\(\s*(?:hereinafter\s+)?(?:(?:referred\s+to\s+as|called|as)\s+)?)" + kQuote +
      R"((?:the\s+)?)" + kQuote + R"(([a-z][a-z-]*))");
  static const std::regex kComma(
      R"(^\s*,\s*(?:hereinafter|as)\s+(?:(?:referred\s+to\s+as|called)\s+)?)" + kQuote +
      R"((?:the\s+)?)" + kQuote + R"(([a-z][a-z-]*))");
  static const std::regex kLabel(R"((?:^|[\s(,;])([a-z][a-z-]*)\s*:\s*$)");
  std::vector<std::string> words;
  const std::string after = hay.substr(end, 80);
  std::smatch m;
  if (std::regex_search(after, m, kParen, std::regex_constants::match_continuous) ||
      std::regex_search(after, m, kComma, std::regex_constants::match_continuous)) {
    words.push_back(m[1]);
  }
  const size_t from = begin > 40 ? begin - 40 : 0;
  const std::string before = hay.substr(from, begin - from);
  if (std::regex_search(before, m, kLabel)) words.push_back(m[1]);
  return words;
}

// The fields whose keyword the text around `needle` binds it to, over
// pages already collapsed.
std::vector<size_t> BoundRolesIn(const std::vector<PipelineSpec::Field>& fields,
                                 const std::string& value, const std::vector<std::string>& hays) {
  std::set<size_t> bound;
  const std::string needle = Collapse(value);
  if (needle.empty()) return {};
  for (const std::string& hay : hays) {
    for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
      for (const std::string& word : RoleWordsAround(hay, at, at + needle.size())) {
        for (size_t i = 0; i < fields.size(); ++i) {
          if (fields[i].type != FactKind::kText) continue;
          for (const std::string& k : fields[i].keywords) {
            if (Collapse(k) == word) bound.insert(i);
          }
        }
      }
    }
  }
  return {bound.begin(), bound.end()};
}

std::vector<std::string> CollapsedPages(const std::vector<Page>& pages) {
  std::vector<std::string> hays;
  for (const Page& page : pages) hays.push_back(Collapse(page.text));
  return hays;
}

}  // namespace

// Page markers a model copies from its input ("[page 2]", "(p. 2)"): they
// carry numbers that are not figures, and we cite pages ourselves.
std::string StripPageMarkers(const std::string& line) {
  static const std::regex kMarker(
      R"(\s*[\[(](?:page|pages|p\.|pp\.|p)\s*\d+(?:\s*[-,–]\s*\d+)*[\])])", std::regex::icase);
  return std::regex_replace(line, kMarker, "");
}

std::vector<size_t> BoundRoles(const std::vector<PipelineSpec::Field>& fields,
                               const std::string& value, const std::vector<Page>& pages) {
  return BoundRolesIn(fields, value, CollapsedPages(pages));
}

int BindRoles(const std::vector<PipelineSpec::Field>& fields, std::vector<FieldValue>* values,
              const std::vector<Page>& pages) {
  std::vector<FieldValue>& v = *values;
  const size_t n = std::min(fields.size(), v.size());
  // other[i]: the fields the document binds i's value to, when i is not
  // among them.
  std::vector<std::vector<size_t>> other(n);
  const std::vector<std::string> hays = CollapsedPages(pages);  // once, not per field
  for (size_t i = 0; i < n; ++i) {
    if (fields[i].type != FactKind::kText || !v[i].present()) continue;
    // "the Buyer" answers with a role, not a party's name.
    std::string words = v[i].normalized;
    if (words.rfind("the ", 0) == 0) words = words.substr(4);
    for (const PipelineSpec::Field& f : fields) {
      if (f.type != FactKind::kText) continue;
      for (const std::string& k : f.keywords) {
        if (NormalizeWords(k) != words) continue;
        v[i].role_note = "the answer '" + v[i].value + "' names a role, not a party";
        v[i].value.clear();
        v[i].normalized.clear();
        v[i].source.reset();
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (fields[i].type != FactKind::kText || !v[i].source) continue;
    std::vector<size_t> roles = BoundRolesIn(fields, v[i].source->text, hays);
    if (std::find(roles.begin(), roles.end(), i) == roles.end()) other[i] = std::move(roles);
  }
  int swaps = 0;
  std::vector<bool> swapped(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (other[i].size() != 1 || swapped[i]) continue;
    const size_t j = other[i][0];
    if (j >= n || swapped[j] || other[j].size() != 1 || other[j][0] != i) continue;
    std::swap(v[i], v[j]);
    for (auto [x, y] : {std::pair{i, j}, std::pair{j, i}}) {
      v[x].role_note = "swapped with " + fields[y].name + ": the document names " +
                       v[x].source->text + " the " + fields[x].label;
      swapped[x] = true;
    }
    ++swaps;
  }
  for (size_t i = 0; i < n; ++i) {
    if (other[i].empty() || swapped[i]) continue;
    std::string labels;
    for (size_t j : other[i]) labels += (labels.empty() ? "the " : " and the ") + fields[j].label;
    v[i].role_conflict = true;
    v[i].role_note = "the document names " + v[i].source->text + " " + labels;
  }
  return swaps;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// The first `n` words of `text` (lowercased), each without punctuation.
std::vector<std::string> FirstWords(std::string_view text, size_t n) {
  std::vector<std::string> words;
  size_t at = 0;
  while (words.size() < n && at < text.size()) {
    while (at < text.size() && !IsWordChar(text[at])) ++at;
    size_t end = at;
    while (end < text.size() && IsWordChar(text[end])) ++end;
    if (end > at) words.push_back(Lower(text.substr(at, end - at)));
    at = end;
  }
  return words;
}

bool NamesField(const std::vector<std::string>& words, const PipelineSpec::Field& f) {
  for (const std::string& w : words) {
    for (const std::string& k : f.keywords) {
      if (!k.empty() && w.rfind(Lower(k), 0) == 0) return true;
    }
  }
  return false;
}

// Words after a clause boundary looked at for another field's name: enough
// for "and the name of the Supplier is", short enough not to reach into
// the next sentence of a long answer.
constexpr size_t kClauseWords = 6;

}  // namespace

std::string OwnAnswer(const std::vector<PipelineSpec::Field>& fields, size_t i,
                      const std::string& answer) {
  const std::string lower = Lower(answer);
  size_t cut = std::string::npos;
  // A lead begins again: its first four words (leads share their opening,
  // "According to the contract,").
  for (const PipelineSpec::Field& f : fields) {
    std::vector<std::string> words = FirstWords(f.lead, 4);
    if (words.size() < 4) continue;
    std::string phrase = words[0];
    for (size_t w = 1; w < words.size(); ++w) phrase += " " + words[w];
    for (size_t at = lower.find(words[0]); at != std::string::npos && at < cut;
         at = lower.find(words[0], at + 1)) {
      const std::vector<std::string> here = FirstWords(std::string_view(lower).substr(at), 4);
      if (here == words && (at == 0 || !IsWordChar(lower[at - 1]))) cut = at;
    }
  }
  // A clause that names another field, and not this one.
  for (const char* boundary : {" and ", ", ", "; ", ". "}) {
    for (size_t at = lower.find(boundary); at != std::string::npos && at < cut;
         at = lower.find(boundary, at + 1)) {
      const std::vector<std::string> words =
          FirstWords(std::string_view(lower).substr(at), kClauseWords);
      if (NamesField(words, fields[i])) continue;
      for (size_t j = 0; j < fields.size(); ++j) {
        if (j != i && NamesField(words, fields[j])) {
          cut = at;
          break;
        }
      }
    }
  }
  if (cut == std::string::npos) return answer;
  std::string out = answer.substr(0, cut);
  while (!out.empty() && (std::isspace(static_cast<unsigned char>(out.back())) ||
                          std::string_view(",;:.-").find(out.back()) != std::string_view::npos)) {
    out.pop_back();
  }
  return out;
}

FieldValue ResolveField(const PipelineSpec::Field& field, const std::string& answer,
                        const std::vector<Page>& pages) {
  FieldValue v;
  v.answer = Trim(answer);
  std::string text = v.answer;
  if (field.type == FactKind::kText) {
    for (const char* brk : {", ", "; ", " ("}) {
      const size_t at = text.find(brk);
      if (at != std::string::npos) text.resize(at);
    }
  }
  const std::optional<Fact> fact = FirstFactOf(field.type, text);
  if (!fact) return v;
  v.value = text.substr(fact->begin, fact->end - fact->begin);
  v.normalized = field.type == FactKind::kText ? NormalizeWords(v.value) : fact->Normalized();
  if (v.normalized.empty()) {
    v.value.clear();
    return v;
  }
  v.source = Locate(*fact, v.value, pages, field.keywords);
  return v;
}

const char* AgreementName(Agreement a) {
  switch (a) {
    case Agreement::kSame:
      return "same";
    case Agreement::kDifferent:
      return "different";
    case Agreement::kOnlyInA:
      return "only in A";
    case Agreement::kOnlyInB:
      return "only in B";
    case Agreement::kInNeither:
      return "in neither";
  }
  return "?";
}

Agreement CompareField(const FieldValue& a, const FieldValue& b) {
  if (!a.present() && !b.present()) return Agreement::kInNeither;
  if (!b.present()) return Agreement::kOnlyInA;
  if (!a.present()) return Agreement::kOnlyInB;
  return a.normalized == b.normalized ? Agreement::kSame : Agreement::kDifferent;
}

std::string CitedCell(const FieldValue& v, const std::string& side) {
  if (!v.present()) return "—";
  if (v.role_conflict) return Cell(v.value) + " (unverified: " + Cell(v.role_note) + ")";
  if (!v.verified()) return Cell(v.value) + " (unverified)";
  std::string where = side;
  if (v.source->page > 0) where += (where.empty() ? "p." : " p.") + std::to_string(v.source->page);
  return Cell(v.source->text) + (where.empty() ? "" : " (" + where + ")");
}

std::string RenderFieldsTable(const std::vector<PipelineSpec::Field>& fields,
                              const std::vector<FieldValue>& values) {
  std::string out = "| Term | Value |\n|---|---|\n";
  for (size_t i = 0; i < fields.size(); ++i) {
    out += "| " + Cell(fields[i].label) + " | " + CitedCell(values[i], "") + " |\n";
  }
  return out;
}

std::string RenderComparisonTable(const std::vector<PipelineSpec::Field>& fields,
                                  const std::vector<FieldValue>& a,
                                  const std::vector<FieldValue>& b) {
  std::string out = "| Term | A | B | |\n|---|---|---|---|\n";
  for (size_t i = 0; i < fields.size(); ++i) {
    out += "| " + Cell(fields[i].label) + " | " + CitedCell(a[i], "A") + " | " +
           CitedCell(b[i], "B") + " | " + AgreementName(CompareField(a[i], b[i])) + " |\n";
  }
  return out;
}

std::string DifferencesList(const std::vector<PipelineSpec::Field>& fields,
                            const std::vector<FieldValue>& a, const std::vector<FieldValue>& b) {
  std::string out;
  auto said = [](const FieldValue& v) {
    return v.verified() ? v.source->text : v.present() ? v.value : std::string("not stated");
  };
  for (size_t i = 0; i < fields.size(); ++i) {
    const Agreement g = CompareField(a[i], b[i]);
    if (g == Agreement::kInNeither) continue;
    out += "- " + fields[i].label + ": ";
    if (g == Agreement::kSame) {
      out += said(a[i]) + " in both.\n";
    } else {
      out += said(a[i]) + " in A, " + said(b[i]) + " in B.\n";
    }
  }
  return out;
}

ordered_json FieldsJson(const std::vector<PipelineSpec::Field>& fields,
                        const std::vector<FieldValue>& values) {
  ordered_json out = ordered_json::object();
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldValue& v = values[i];
    ordered_json f = {
        {"label", fields[i].label}, {"type", FactKindName(fields[i].type)}, {"answer", v.answer}};
    f["value"] = v.present() ? ordered_json(v.value) : ordered_json(nullptr);
    f["normalized"] = v.present() ? ordered_json(v.normalized) : ordered_json(nullptr);
    f["verified"] = v.verified();
    if (v.verified()) {
      f["page"] = v.source->page > 0 ? ordered_json(v.source->page) : ordered_json(nullptr);
      f["source"] = v.source->text;
      f["span"] = {v.source->begin, v.source->end};
    } else {
      f["page"] = nullptr;
    }
    if (!v.role_note.empty()) f["role"] = v.role_note;
    out[fields[i].name] = std::move(f);
  }
  return out;
}

FigureCheck VerifyFigureLines(const std::string& body, const std::vector<Page>& pages) {
  FigureCheck out;
  size_t at = 0;
  while (at <= body.size()) {
    size_t nl = body.find('\n', at);
    if (nl == std::string::npos) nl = body.size();
    const std::string raw = body.substr(at, nl - at);
    at = nl + 1;
    const std::string line = StripPageMarkers(raw);
    const std::vector<Fact> figures = FiguresIn(line);
    // A line that said nothing but a page ("- [page 4]") goes.
    if (Trim(line) == "-" || (Trim(line).empty() && !Trim(raw).empty())) continue;
    if (figures.empty()) {
      if (!Trim(raw).empty() || nl < body.size()) out.text += raw + "\n";
      continue;
    }
    std::set<int> cited;
    bool all_found = true;
    for (const Fact& f : figures) {
      ++out.figures_total;
      // Figures of one line are looked up near each other: the first one
      // found fixes the page the others are looked for on first.
      const int hint = cited.empty() ? 0 : *cited.begin();
      const std::string spelled = line.substr(f.begin, f.end - f.begin);
      if (auto where = Locate(f, spelled, pages, {}, hint)) {
        ++out.figures_found;
        if (where->page > 0) cited.insert(where->page);
      } else {
        all_found = false;
      }
    }
    if (!all_found) {
      out.unverified.push_back(Trim(line));
      continue;
    }
    std::string kept = line;
    while (!kept.empty() && kept.back() == ' ') kept.pop_back();
    if (!cited.empty()) kept += " [p. " + PagesText(cited) + "]";
    out.text += kept + "\n";
    out.citations.push_back(
        {{"line", Trim(kept)}, {"pages", std::vector<int>(cited.begin(), cited.end())}});
  }
  while (!out.text.empty() && out.text.back() == '\n') out.text.pop_back();
  return out;
}

std::string MergeFigureLines(const std::string& body, const std::vector<std::string>& mapped,
                             size_t max_lines) {
  static const std::regex kCite(R"(\[p\. (\d+))");
  struct Line {
    int page;
    size_t order;
    std::string text;
  };
  std::vector<Line> lines;
  std::vector<Fact> have;
  auto add = [&](const std::string& raw, bool always) {
    const std::string line = Trim(raw);
    if (line.empty()) return;
    std::smatch m;
    const int page = std::regex_search(line, m, kCite) ? std::stoi(m[1].str()) : 1 << 30;
    const std::vector<Fact> figs = FiguresIn(StripPageMarkers(line));
    bool fresh = figs.empty() ? always : false;
    for (const Fact& f : figs) {
      const bool known =
          std::any_of(have.begin(), have.end(), [&](const Fact& h) { return SameValue(f, h); });
      fresh = fresh || !known;
    }
    if (!fresh) return;
    have.insert(have.end(), figs.begin(), figs.end());
    lines.push_back({page, lines.size(), line});
  };
  size_t at = 0;
  while (at <= body.size()) {
    size_t nl = body.find('\n', at);
    if (nl == std::string::npos) nl = body.size();
    add(body.substr(at, nl - at), true);
    at = nl + 1;
  }
  for (const std::string& l : mapped) add(l, false);
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& a, const Line& b) { return a.page < b.page; });
  if (lines.size() > max_lines) lines.resize(max_lines);
  std::string out;
  for (const Line& l : lines) out += (out.empty() ? "" : "\n") + l.text;
  return out;
}

std::string KeepSupportedSentences(const std::string& prose, const std::string& allowed,
                                   int* dropped) {
  const std::vector<Fact> known = FiguresIn(allowed);
  std::string out;
  *dropped = 0;
  size_t at = 0;
  while (at < prose.size()) {
    // A sentence ends at ". " / "! " / "? " or a line end.
    size_t end = prose.size();
    for (size_t i = at; i < prose.size(); ++i) {
      const char c = prose[i];
      if (c == '\n' || ((c == '.' || c == '!' || c == '?') &&
                        (i + 1 == prose.size() || prose[i + 1] == ' ' || prose[i + 1] == '\n'))) {
        end = i + 1;
        break;
      }
    }
    const std::string sentence = prose.substr(at, end - at);
    at = end;
    bool supported = true;
    for (const Fact& f : FiguresIn(sentence)) {
      const bool found =
          std::any_of(known.begin(), known.end(), [&](const Fact& k) { return SameValue(f, k); });
      if (!found) supported = false;
    }
    if (supported) {
      out += sentence;
    } else {
      ++*dropped;
    }
  }
  return Trim(out);
}

}  // namespace ellm::pipelines
