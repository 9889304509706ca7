// A contract's own structure: its clauses from its numbering and headings
// (contracts.h SplitClauses). Its parties: parties.cc; its values: values.cc.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "contracts/words.h"
#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
namespace {

// Only a line's first bytes are matched against the numbering patterns
// (std::regex is recursive: a bounded input keeps it bounded).
constexpr size_t kMatchedPrefix = 240;
// A heading is short.
constexpr int kMaxHeadingWords = 10;
// A contract's clauses beyond this many join the last one's text (aligning
// costs the product of the two counts).
constexpr size_t kMaxClauses = 2000;

struct Line {
  std::string text;
  int page = 0;
  bool paragraph = false;  // a blank line or a page start comes before it
};

using contract_words::CountWords;
using contract_words::TrimCopy;

// En and em dashes as "-": "Clause 3 – Term" numbers like "Clause 3 - Term".
std::string DashesAsHyphens(std::string s) {
  for (const char* dash : {"\xE2\x80\x93", "\xE2\x80\x94"}) {
    for (size_t at = s.find(dash); at != std::string::npos; at = s.find(dash, at)) {
      s.replace(at, 3, "-");
    }
  }
  return s;
}

// Page furniture: "3", "- 3 -", "Page 3", "Page 3 of 12".
bool IsPageFurniture(const std::string& line) {
  static const std::regex re(R"(^(?:-\s*)?(?:page\s+)?\d{1,4}(?:\s+of\s+\d{1,4})?(?:\s*-)?$)",
                             std::regex::icase);
  return line.size() < 24 && std::regex_match(line, re);
}

// "PAYMENT TERMS", "GOVERNING LAW AND JURISDICTION": letters all capitals,
// at least four of them, few words, no sentence end.
bool IsCapitalsHeading(const std::string& line) {
  if (line.empty() || CountWords(line) > kMaxHeadingWords || line.back() == '.' ||
      line.back() == ',' || line.back() == ';')
    return false;
  int upper = 0;
  for (char c : line) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    upper += std::isupper(static_cast<unsigned char>(c)) != 0;
  }
  return upper >= 4;
}

struct Start {
  ClauseKind kind = ClauseKind::kClause;
  std::string number;
  std::string rest;  // the line after the number
  int level = 1;
  int top = 0;  // the first component of a decimal number; 0 otherwise
};

int RomanValue(const std::string& s) {
  int total = 0, prev = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    int v = 0;
    switch (std::toupper(static_cast<unsigned char>(*it))) {
      case 'I':
        v = 1;
        break;
      case 'V':
        v = 5;
        break;
      case 'X':
        v = 10;
        break;
      case 'L':
        v = 50;
        break;
      case 'C':
        v = 100;
        break;
      default:
        return 0;
    }
    total += v < prev ? -v : v;
    prev = std::max(prev, v);
  }
  return total;
}

// The rest of `full` from where group `g` of a match on its prefix begins.
std::string RestFrom(const std::string& full, const std::smatch& m, int g) {
  return TrimCopy(std::string_view(full).substr(static_cast<size_t>(m.position(g))));
}

std::optional<Start> MatchStart(const std::string& full) {
  const std::string line = full.substr(0, kMatchedPrefix);
  static const std::regex article(
      R"(^(?:ARTICLE|Article)\s+([IVXLC]+|\d{1,3})\b\s*[.:-]?\s*(.*)$)");
  static const std::regex section(
      R"(^(?:SECTION|Section|CLAUSE|Clause)\s+(\d{1,3}(?:\.\d{1,3})*)\.?\s*[.:-]?\s*(.*)$)");
  static const std::regex schedule(
      R"(^(?:SCHEDULE|Schedule|ANNEX|Annex|APPENDIX|Appendix|EXHIBIT|Exhibit)\s+([A-Z]|\d{1,2}|[IVX]+)\b\s*[.:-]?\s*(.*)$)");
  static const std::regex decimal(R"(^(\d{1,3}(?:\.\d{1,3})*)(\.?)\s+(\S.*)$)");
  std::smatch m;
  Start s;
  if (std::regex_match(line, m, article)) {
    s.number = m[1];
    s.rest = RestFrom(full, m, 2);
    s.top = std::isdigit(static_cast<unsigned char>(s.number[0])) ? std::stoi(s.number)
                                                                  : RomanValue(s.number);
    return s;
  }
  if (std::regex_match(line, m, schedule)) {
    s.kind = ClauseKind::kSchedule;
    s.number = m[1];
    s.rest = RestFrom(full, m, 2);
    return s;
  }
  if (std::regex_match(line, m, section)) {
    s.number = m[1];
    s.rest = RestFrom(full, m, 2);
  } else if (std::regex_match(line, m, decimal)) {
    s.number = m[1];
    s.rest = RestFrom(full, m, 3);
    const bool dotted = s.number.find('.') != std::string::npos;
    const unsigned char first = static_cast<unsigned char>(s.rest[0]);
    const bool opens = std::isupper(first) || first == '(' || first == '"' ||
                       s.rest.rfind("\xE2\x80\x9C", 0) == 0;  // a left double quotation mark
    // "1. The Supplier ..." or "4.2 Payment ..."; "30 days after" is text,
    // and so is "2 Manufacturers supply ..." (no dot, not a heading).
    if (!opens) return std::nullopt;
    if (!dotted && m[2].length() == 0 && !IsCapitalsHeading(s.rest) && CountWords(s.rest) > 4)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  s.level = 1 + static_cast<int>(std::count(s.number.begin(), s.number.end(), '.'));
  s.top = std::stoi(s.number.substr(0, s.number.find('.')));
  return s;
}

// Whether the '.' at line[dot] ends a single-letter abbreviation ("U.S.",
// "C.F.R.", "e.g."): a letter alone before it, after a space, a '.' or the
// line's start. Such a dot ends no sentence and no heading.
bool EndsAbbreviation(std::string_view line, size_t dot) {
  if (dot == 0 || line[dot] != '.') return false;
  const unsigned char letter = static_cast<unsigned char>(line[dot - 1]);
  return std::isalpha(letter) && (dot == 1 || line[dot - 2] == ' ' || line[dot - 2] == '.');
}

// A reflowed paragraph (PDF text joins a block's lines) may hold several
// clause starts: "4. REPAIRS 4.1 The Landlord shall ... repair. 4.2 The
// Tenant shall ...". Splits before a clause number that follows a sentence
// end or a word in capitals and is itself a sub-clause number (4.1) or
// "Section"/"Clause"/"ARTICLE"; a plain "5." only after a sentence end.
std::vector<std::string> SplitRunIn(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 1; i + 1 < line.size(); ++i) {
    if (line[i] != ' ') continue;
    const char prev = line[i - 1];
    const bool sentence_end =
        (prev == '.' && !EndsAbbreviation(line, i - 1)) || prev == ';' || prev == ':';
    size_t w = i;
    while (w > start && line[w - 1] != ' ') --w;
    bool caps_word = i - w >= 2;
    for (size_t k = w; k < i && caps_word; ++k) {
      caps_word = std::isupper(static_cast<unsigned char>(line[k])) || line[k] == '-';
    }
    if (!sentence_end && !caps_word) continue;
    const unsigned char next = static_cast<unsigned char>(line[i + 1]);
    if (!std::isdigit(next) && next != 'S' && next != 'C' && next != 'A') continue;
    const std::string candidate = line.substr(i + 1, kMatchedPrefix);
    std::optional<Start> s = MatchStart(candidate);
    if (!s) continue;
    const bool keyword = !std::isdigit(next);
    const bool plain = !keyword && s->level == 1;
    if (plain && (!sentence_end || candidate.find('.') != s->number.size())) continue;
    out.push_back(TrimCopy(std::string_view(line).substr(start, i - start)));
    start = i + 1;
  }
  out.push_back(TrimCopy(std::string_view(line).substr(start)));
  return out;
}

// Letters all capitals (at least four), whatever the line's length.
bool IsCapitalsText(const std::string& line) {
  int upper = 0;
  for (char c : line) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    if (std::isupper(static_cast<unsigned char>(c))) ++upper;
  }
  return upper >= 4;
}

bool EndsSentence(const std::string& line) {
  if (line.empty()) return false;
  const char last = line.back();
  return (last == '.' && !EndsAbbreviation(line, line.size() - 1)) || last == ';' || last == ':';
}

bool StartsWithWord(const std::string& line, std::string_view word) {
  if (line.size() < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != word[i]) return false;
  }
  return line.size() == word.size() || !std::isalnum(static_cast<unsigned char>(line[word.size()]));
}

bool IsSignatureStart(const std::string& line) {
  return StartsWithWord(line, "in witness whereof") || StartsWithWord(line, "signed by") ||
         StartsWithWord(line, "signed for and on behalf") || StartsWithWord(line, "executed by") ||
         StartsWithWord(line, "signatures");
}

// Where a reflowed paragraph runs on into the signature block: the offset
// of "IN WITNESS WHEREOF", "SIGNED ..." or "EXECUTED ..." (in capitals, as
// contracts write them) after a sentence end; npos if there is none.
size_t SignatureRunIn(const std::string& line) {
  for (std::string_view opener : {". IN WITNESS WHEREOF", ". SIGNED ", ". EXECUTED "}) {
    const size_t at = line.find(opener);
    if (at != std::string::npos) return at + 2;
  }
  return std::string::npos;
}

bool IsRecitalHeading(const std::string& line) {
  return (StartsWithWord(line, "recitals") || StartsWithWord(line, "background") ||
          StartsWithWord(line, "whereas")) &&
         CountWords(line) <= 3;
}

bool IsDefinitionsHeading(std::string_view heading) {
  std::string h;
  for (char c : heading) h += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return h.find("definition") != std::string::npos || h.find("interpretation") != std::string::npos;
}

// "5. Payment Terms" (heading alone), "5. Payment. The Customer shall ..."
// (heading, then text), "5. The Customer shall ..." (text only).
void SplitHeading(const std::string& rest, std::string* heading, std::string* text) {
  heading->clear();
  text->clear();
  if (rest.empty()) return;
  const bool sentence_end = rest.back() == '.' || rest.back() == ';' || rest.back() == ':';
  if (!sentence_end && CountWords(rest) <= kMaxHeadingWords) {
    *heading = rest;
    return;
  }
  size_t dot = rest.find(". ");
  while (dot != std::string::npos && EndsAbbreviation(rest, dot)) dot = rest.find(". ", dot + 1);
  if (dot != std::string::npos && dot > 0 && CountWords(rest.substr(0, dot)) <= 6 &&
      std::isupper(static_cast<unsigned char>(rest[0]))) {
    *heading = rest.substr(0, dot);
    *text = TrimCopy(rest.substr(dot + 2));
    return;
  }
  if (!rest.empty() && rest.back() == ':' && CountWords(rest) <= kMaxHeadingWords) {
    *heading = rest.substr(0, rest.size() - 1);
    return;
  }
  // A heading run into its text, as a PDF's reflowed paragraph gives it:
  // "Fees and Payment The Customer shall pay ...": title-case words, then a
  // word that opens a sentence.
  static const std::set<std::string> openers = {
      "The",     "This",   "These",  "Each",    "Either", "Any",
      "All",     "If",     "In",     "Subject", "No",     "Neither",
      "Nothing", "Unless", "Where",  "Upon",    "During", "Notwithstanding",
      "Without", "A",      "An",     "Save",    "Except", "Following",
      "Before",  "After",  "Should", "From",    "Within"};
  static const std::set<std::string> joins = {"of", "and", "or", "for", "to", "on", "&", "-"};
  std::vector<std::pair<size_t, size_t>> words;  // [begin, end) of each word
  for (size_t i = 0; i < rest.size() && words.size() < 9;) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    size_t j = rest.find(' ', i);
    if (j == std::string::npos) j = rest.size();
    if (j > i) words.emplace_back(i, j);
    i = j;
  }
  for (size_t k = 1; k < words.size() && k <= 6; ++k) {
    const std::string w = rest.substr(words[k].first, words[k].second - words[k].first);
    if (!openers.count(w)) continue;
    bool title = true;
    for (size_t t = 0; t < k && title; ++t) {
      const std::string u = rest.substr(words[t].first, words[t].second - words[t].first);
      title = std::isupper(static_cast<unsigned char>(u[0])) || joins.count(u);
    }
    if (!title) break;
    *heading = rest.substr(0, words[k - 1].second);
    *text = rest.substr(words[k].first);
    return;
  }
  *text = rest;
}

void Append(std::string* text, const std::string& line) {
  if (line.empty()) return;
  if (!text->empty()) *text += ' ';
  *text += line;
}

}  // namespace

const char* ClauseKindName(ClauseKind kind) {
  switch (kind) {
    case ClauseKind::kPreamble:
      return "preamble";
    case ClauseKind::kRecital:
      return "recital";
    case ClauseKind::kDefinitions:
      return "definitions";
    case ClauseKind::kClause:
      return "clause";
    case ClauseKind::kSchedule:
      return "schedule";
    case ClauseKind::kSignature:
      return "signature";
  }
  return "clause";
}

namespace {

// A contract without numbering or headings: its paragraphs are its clauses,
// numbered "¶1", "¶2", ...; a short line of its own (no sentence end) is
// the heading of the paragraph after it. The first paragraph is the
// preamble.
std::vector<Clause> SplitParagraphs(const std::vector<Line>& lines) {
  std::vector<Clause> out;
  std::string heading;
  int count = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    const bool alone = l.paragraph && (i + 1 == lines.size() || lines[i + 1].paragraph);
    const char last = l.text.back();
    if (alone && CountWords(l.text) <= 8 && last != '.' && last != ';' && last != ',' &&
        i + 1 < lines.size()) {
      heading = l.text;
      continue;
    }
    if (l.paragraph || out.empty()) {
      if (IsSignatureStart(l.text) || (!out.empty() && out.back().kind == ClauseKind::kSignature)) {
        if (out.empty() || out.back().kind != ClauseKind::kSignature) {
          Clause c;
          c.kind = ClauseKind::kSignature;
          c.first_page = c.last_page = l.page;
          out.push_back(std::move(c));
        }
      } else {
        Clause c;
        c.kind = out.empty() ? ClauseKind::kPreamble : ClauseKind::kClause;
        c.heading = heading;
        if (!out.empty()) c.number = "\xC2\xB6" + std::to_string(++count);
        c.first_page = c.last_page = l.page;
        out.push_back(std::move(c));
        heading.clear();
      }
    }
    Append(&out.back().text, l.text);
    out.back().last_page = l.page;
  }
  if (!heading.empty()) {
    if (out.empty()) {
      Clause c;
      c.kind = ClauseKind::kPreamble;
      out.push_back(std::move(c));
    }
    Append(&out.back().text, heading);
  }
  return out;
}

// Where the numbering stands.
struct Numbering {
  bool numbered = false;  // a numbered clause has been seen
  int top = 0;            // the last top-level number
  int sub = 0;            // the last second-level number under it (4 for 3.4)
};

// The second component of "3.4" or "3.4.1"; 0 when there is none.
int SubNumber(const std::string& number) {
  const size_t dot = number.find('.');
  if (dot == std::string::npos || dot + 1 >= number.size()) return 0;
  return std::atoi(number.c_str() + dot + 1);
}

// Whether clause start `s` on lines[i] can be one where the numbering
// stands.
bool FollowsOn(const Start& s, const Numbering& n, const std::vector<Line>& lines, size_t i) {
  const bool numbered = n.numbered;
  const int top = n.top;
  if (s.kind == ClauseKind::kClause) {
    // A decimal number must follow on from the numbering so far: a list
    // "1. 2. 3." inside clause 7 is the clause's text.
    if (numbered && s.top != 0 && (s.top < top || s.top > top + 2) &&
        !(s.level == 1 && s.top == top + 1)) {
      return false;
    }
    // A sub-clause belongs to the clause open now or to the next one
    // ("12.212" inside clause 10 is a citation, not clause 12's part).
    if (numbered && s.level > 1 && s.top != top && s.top != top + 1) return false;
    // Sub-clauses count up: "3.4(a) above" or "Section\n3.5" on a wrapped
    // line after 3.1 is a reference ("3.2" may follow "3.1", or "3.3").
    if (numbered && s.level == 2) {
      const int sub = SubNumber(s.number);
      const int last = s.top == top ? n.sub : 0;
      if (sub <= last || sub > last + 2) return false;
    }
    if (!numbered && s.level > 1 && s.top > 2) return false;
  }
  // "Exhibit A" at the start of a hard-wrapped line ("... described in\n
  // Exhibit A. You must also ...") is a reference to it: a schedule that
  // continues a sentence must carry a title ("Schedule 2 - Goods").
  if (s.kind == ClauseKind::kSchedule && !lines[i].paragraph && i > 0 &&
      !EndsSentence(lines[i - 1].text) && !IsCapitalsHeading(lines[i - 1].text) &&
      !s.rest.empty() &&
      (std::islower(static_cast<unsigned char>(s.rest[0])) || CountWords(s.rest) > 6)) {
    return false;
  }
  return true;
}

// Clauses by numbering and headings.
std::vector<Clause> SplitNumbered(const std::vector<Line>& lines) {
  std::vector<Clause> out;
  auto open = [&](ClauseKind kind, int page) -> Clause& {
    Clause c;
    c.kind = kind;
    c.first_page = c.last_page = page;
    out.push_back(std::move(c));
    return out.back();
  };
  Numbering at;
  std::string pending;  // a capitals heading waiting for its clause
  int pending_page = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (IsSignatureStart(l.text)) {
      Clause& c = open(ClauseKind::kSignature, l.page);
      c.text = l.text;
      pending.clear();
      continue;
    }
    if (!out.empty() && out.back().kind == ClauseKind::kSignature) {
      // A schedule may follow the signatures; everything else is theirs.
      if (auto s = MatchStart(l.text); !s || s->kind != ClauseKind::kSchedule) {
        Append(&out.back().text, l.text);
        out.back().last_page = l.page;
        continue;
      }
    }
    if (!at.numbered && (IsRecitalHeading(l.text) || StartsWithWord(l.text, "whereas"))) {
      Clause& c = open(ClauseKind::kRecital, l.page);
      if (!IsRecitalHeading(l.text)) c.text = l.text;
      continue;
    }
    const std::optional<Start> s = MatchStart(l.text);
    if (s && FollowsOn(*s, at, lines, i)) {
      Clause& c = open(s->kind, l.page);
      c.number = s->number;
      c.level = s->level;
      SplitHeading(s->rest, &c.heading, &c.text);
      if (c.heading.empty() && !pending.empty()) c.heading = pending;
      if (c.kind == ClauseKind::kClause && IsDefinitionsHeading(c.heading))
        c.kind = ClauseKind::kDefinitions;
      if (s->kind == ClauseKind::kClause && s->top != 0) {
        if (s->top != at.top) at.sub = 0;
        if (s->level == 2) at.sub = SubNumber(s->number);
        at.top = s->top;
      }
      if (s->kind == ClauseKind::kClause) at.numbered = true;
      pending.clear();
      continue;
    }
    // (Not a line of a hard-wrapped paragraph in capitals, a disclaimer:
    // one that continues a sentence, or runs on into more capitals.)
    const bool starts =
        (l.paragraph || i == 0 || EndsSentence(lines[i - 1].text)) &&
        !(i + 1 < lines.size() && !lines[i + 1].paragraph && IsCapitalsText(lines[i + 1].text));
    if (starts && IsCapitalsHeading(l.text) && i + 1 < lines.size()) {
      // A heading alone on its line: of the numbered clause that follows,
      // or of an unnumbered clause of its own.
      if (MatchStart(lines[i + 1].text)) {
        pending = l.text;
        pending_page = l.page;
        continue;
      }
      if (at.numbered || !out.empty()) {
        Clause& c = open(
            IsDefinitionsHeading(l.text) ? ClauseKind::kDefinitions : ClauseKind::kClause, l.page);
        c.heading = l.text;
        continue;
      }
    }
    if (out.empty()) open(ClauseKind::kPreamble, l.page);
    if (!pending.empty()) {
      Append(&out.back().text, pending);
      pending.clear();
    }
    Append(&out.back().text, l.text);
    out.back().last_page = l.page;
  }
  if (!pending.empty()) {
    if (out.empty()) open(ClauseKind::kPreamble, pending_page);
    Append(&out.back().text, pending);
  }
  return out;
}

}  // namespace

std::vector<Clause> SplitClauses(const std::vector<Page>& pages) {
  std::vector<Line> lines;
  for (const Page& p : pages) {
    size_t at = 0;
    bool blank = true;
    while (at <= p.text.size()) {
      size_t nl = p.text.find('\n', at);
      if (nl == std::string::npos) nl = p.text.size();
      std::string line = DashesAsHyphens(TrimCopy(std::string_view(p.text).substr(at, nl - at)));
      if (line.empty()) {
        blank = true;
      } else if (!IsPageFurniture(line)) {
        for (std::string& part : SplitRunIn(line)) {
          if (const size_t sig = SignatureRunIn(part); sig != std::string::npos) {
            lines.push_back({part.substr(0, sig - 1), p.number, blank});
            part.erase(0, sig);
            blank = true;
          }
          if (!part.empty()) lines.push_back({std::move(part), p.number, blank});
          blank = false;
        }
      }
      at = nl + 1;
    }
  }
  std::vector<Clause> numbered_clauses = SplitNumbered(lines);
  const bool any_numbered =
      std::any_of(numbered_clauses.begin(), numbered_clauses.end(), [](const Clause& c) {
        return !c.number.empty() || (c.kind != ClauseKind::kPreamble && !c.heading.empty());
      });
  std::vector<Clause> out = any_numbered ? std::move(numbered_clauses) : SplitParagraphs(lines);
  if (out.size() > kMaxClauses) {
    Clause& last = out[kMaxClauses - 1];
    for (size_t i = kMaxClauses; i < out.size(); ++i) {
      Append(&last.text, out[i].text);
      last.last_page = out[i].last_page;
    }
    out.resize(kMaxClauses);
  }
  return out;
}

}  // namespace ellm::pipelines
