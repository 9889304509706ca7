// A contract's own structure: clauses from its numbering and headings, the
// parties from its definitions, the values each clause states.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
namespace {

// Only a line's first bytes are matched against the numbering patterns
// (std::regex is recursive: a bounded input keeps it bounded).
constexpr size_t kMatchedPrefix = 240;
// A heading is short.
constexpr int kMaxHeadingWords = 10;
// Parties are defined near the start of a page: the definitions are looked
// for in each page's first bytes only (a bound on the regex's work).
constexpr size_t kPartySearchBytes = 16 * 1024;
// A contract's clauses beyond this many join the last one's text (aligning
// costs the product of the two counts).
constexpr size_t kMaxClauses = 2000;

struct Line {
  std::string text;
  int page = 0;
  bool paragraph = false;  // a blank line or a page start comes before it
};

std::string TrimCopy(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

int CountWords(std::string_view s) {
  int n = 0;
  bool in = false;
  for (char c : s) {
    const bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

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
    const bool sentence_end = prev == '.' || prev == ';' || prev == ':';
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
  const size_t dot = rest.find(". ");
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
  int top = 0;            // the last top-level number seen
  bool numbered = false;  // a numbered clause has been seen
  std::string pending;    // a capitals heading waiting for its clause
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
    if (!numbered && (IsRecitalHeading(l.text) || StartsWithWord(l.text, "whereas"))) {
      Clause& c = open(ClauseKind::kRecital, l.page);
      if (!IsRecitalHeading(l.text)) c.text = l.text;
      continue;
    }
    std::optional<Start> s = MatchStart(l.text);
    // A decimal number must follow on from the numbering so far: a list
    // "1. 2. 3." inside clause 7 is the clause's text.
    if (s && s->kind == ClauseKind::kClause && numbered && s->top != 0 &&
        (s->top < top || s->top > top + 2) && !(s->level == 1 && s->top == top + 1))
      s.reset();
    if (s && s->kind == ClauseKind::kClause && !numbered && s->level > 1 && s->top > 2) s.reset();
    if (s) {
      Clause& c = open(s->kind, l.page);
      c.number = s->number;
      c.level = s->level;
      SplitHeading(s->rest, &c.heading, &c.text);
      if (c.heading.empty() && !pending.empty()) c.heading = pending;
      if (c.kind == ClauseKind::kClause && IsDefinitionsHeading(c.heading))
        c.kind = ClauseKind::kDefinitions;
      if (s->kind == ClauseKind::kClause) {
        top = s->top;
        numbered = true;
      }
      pending.clear();
      continue;
    }
    if (IsCapitalsHeading(l.text) && i + 1 < lines.size()) {
      // A heading alone on its line: of the numbered clause that follows,
      // or of an unnumbered clause of its own.
      if (MatchStart(lines[i + 1].text)) {
        pending = l.text;
        pending_page = l.page;
        continue;
      }
      if (numbered || !out.empty()) {
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

namespace {

// Curly quotation marks as straight ones (the patterns match bytes).
std::string StraightQuotes(std::string s) {
  const std::pair<const char*, const char*> marks[] = {
      {"\xE2\x80\x9C", "\""}, {"\xE2\x80\x9D", "\""}, {"\xE2\x80\x98", "'"}, {"\xE2\x80\x99", "'"}};
  for (const auto& [from, to] : marks) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at)) {
      s.replace(at, 3, to);
    }
  }
  return s;
}

// Company forms after a party's name.
bool HasCompanySuffix(const std::string& name) {
  static const std::regex re(
      R"(\b(?:Ltd|Limited|Inc|Incorporated|LLC|LLP|plc|PLC|GmbH|AG|SA|S\.A|SAS|SARL|BV|B\.V|NV|N\.V|Corp|Corporation|Company|Co|Pty|SpA|S\.p\.A|Oy|AB|AS|KG)\b\.?)");
  return std::regex_search(name, re);
}

// Defined terms that are not parties.
bool IsThingTerm(const std::string& role) {
  static const std::set<std::string> things = {"Agreement",      "Contract",
                                               "Effective Date", "Commencement Date",
                                               "Services",       "Goods",
                                               "Products",       "Premises",
                                               "Property",       "Software",
                                               "Licence",        "License",
                                               "Term",           "Fee",
                                               "Fees",           "Price",
                                               "Deliverables",   "Confidential Information",
                                               "Territory",      "Loan",
                                               "Work",           "Works",
                                               "Schedule",       "Purpose",
                                               "Facility"};
  return things.count(role) > 0;
}

// Role words a contract gives its parties in any kind of contract; other
// defined words count as roles only for a named company or in the preamble.
bool IsKnownRole(const std::string& role) {
  static const std::set<std::string> roles = {"Buyer",
                                              "Seller",
                                              "Supplier",
                                              "Customer",
                                              "Client",
                                              "Provider",
                                              "Service Provider",
                                              "Licensor",
                                              "Licensee",
                                              "Landlord",
                                              "Tenant",
                                              "Lessor",
                                              "Lessee",
                                              "Employer",
                                              "Employee",
                                              "Executive",
                                              "Discloser",
                                              "Recipient",
                                              "Disclosing Party",
                                              "Receiving Party",
                                              "Lender",
                                              "Borrower",
                                              "Contractor",
                                              "Subcontractor",
                                              "Consultant",
                                              "Purchaser",
                                              "Vendor",
                                              "Distributor",
                                              "Agent",
                                              "Principal",
                                              "Guarantor",
                                              "Company",
                                              "Owner",
                                              "Manufacturer",
                                              "Reseller",
                                              "Partner",
                                              "Investor",
                                              "Assignor",
                                              "Assignee",
                                              "Franchisor",
                                              "Franchisee",
                                              "Publisher",
                                              "Author"};
  return roles.count(role) > 0;
}

// Where a party's name begins, reading back from `end` in `text` but not
// before `floor` (the end of the previous definition): after "between", a
// line start, "(1)", ":" or ";"; then "and" and commas before the name are
// dropped, and so is what follows its first comma ("ACME LIMITED, a company
// incorporated in England and Wales" -> "ACME LIMITED").
std::string NameBefore(const std::string& text, size_t floor, size_t end) {
  const size_t from = std::max(floor, end > 300 ? end - 300 : size_t{0});
  std::string before = text.substr(from, end - from);
  static const std::regex cut(R"((?:^|\n|\bbetween\b|\bBETWEEN\b|:|;|\(\d\)|\([a-z]\)\s)\s*)");
  size_t start = 0;
  for (auto it = std::sregex_iterator(before.begin(), before.end(), cut);
       it != std::sregex_iterator(); ++it) {
    const size_t after = static_cast<size_t>(it->position(0) + it->length(0));
    if (after < before.size()) start = after;
  }
  std::string name = TrimCopy(before.substr(start));
  static const std::regex lead(R"(^(?:[,.]\s*)*(?:and|AND)\s+)");
  name = std::regex_replace(name, lead, "");
  while (!name.empty() && (name.front() == ',' || name.front() == ' ')) name.erase(0, 1);
  // "Background (Master Services Agreement) Brightwave Consulting Ltd": a
  // heading run into the text ends at its bracket; "ACME LIMITED, ...
  // (company number 123)" has nothing after it and stays.
  if (const size_t close = name.rfind(')'); close != std::string::npos) {
    const std::string after = TrimCopy(name.substr(close + 1));
    if (!after.empty() && std::isupper(static_cast<unsigned char>(after[0]))) name = after;
  }
  if (const size_t comma = name.find(','); comma != std::string::npos) {
    // Keep "Acme, Inc." whole.
    if (!HasCompanySuffix(TrimCopy(name.substr(comma + 1)).substr(0, 6))) {
      name = name.substr(0, comma);
    }
  }
  // "A Ltd and B Ltd (the "Buyer")": the name after the last "and".
  if (const size_t and_at = name.rfind(" and ");
      and_at != std::string::npos && and_at + 5 < name.size() &&
      std::isupper(static_cast<unsigned char>(name[and_at + 5])) &&
      HasCompanySuffix(name.substr(0, and_at))) {
    name = name.substr(and_at + 5);
  }
  name = TrimCopy(name);
  while (!name.empty() && (name.back() == ',' || name.back() == '.')) name.pop_back();
  // "agrees to lend Vega Analytics LLC": the name is the capitalised run
  // at the end.
  if (!name.empty() && !std::isupper(static_cast<unsigned char>(name[0]))) {
    static const std::set<std::string> joins = {"&",  "and", "of",  "de", "du",
                                                "la", "von", "van", "der"};
    std::vector<std::string> words;
    for (size_t i = 0; i < name.size();) {
      while (i < name.size() && name[i] == ' ') ++i;
      size_t j = name.find(' ', i);
      if (j == std::string::npos) j = name.size();
      if (j > i) words.push_back(name.substr(i, j - i));
      i = j;
    }
    size_t k = words.size();
    while (k > 0 && (std::isupper(static_cast<unsigned char>(words[k - 1][0])) ||
                     std::isdigit(static_cast<unsigned char>(words[k - 1][0])) ||
                     joins.count(words[k - 1]) || HasCompanySuffix(words[k - 1]))) {
      --k;
    }
    while (k < words.size() && joins.count(words[k])) ++k;
    name.clear();
    for (size_t i = k; i < words.size(); ++i) name += (name.empty() ? "" : " ") + words[i];
  }
  // "Harbor Logistics Inc." keeps the dot of its abbreviation.
  const size_t found = name.empty() ? std::string::npos : before.rfind(name);
  if (found != std::string::npos && found + name.size() < before.size() &&
      before[found + name.size()] == '.') {
    const size_t space = name.rfind(' ');
    const std::string last = space == std::string::npos ? name : name.substr(space + 1);
    if (last == "Inc" || last == "Co" || last == "Corp" || last == "Ltd" || last == "S.A" ||
        last == "N.V" || last == "B.V")
      name += '.';
  }
  if (name.rfind("the ", 0) == 0 || name.rfind("The ", 0) == 0 || name.rfind("this ", 0) == 0 ||
      name.rfind("This ", 0) == 0)
    return "";
  return name;
}

}  // namespace

std::vector<Party> FindParties(const std::vector<Page>& pages) {
  std::vector<Party> out;
  std::set<std::string> seen;
  // The preamble: the text before the first numbered clause.
  const std::vector<Clause> clauses = SplitClauses(pages);
  std::string preamble;
  for (const Clause& c : clauses) {
    if (c.kind != ClauseKind::kPreamble && c.kind != ClauseKind::kRecital) break;
    preamble += c.text + "\n";
  }
  static const std::regex defined(
      R"re(\(\s*(?:hereinafter\s+)?(?:(?:referred\s+to\s+as|called|as)\s+)?(?:the\s+)?["']?(?:the\s+)?([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)["']?\s*\)|,\s*(?:hereinafter|hereafter)\s+(?:referred\s+to\s+as|called)\s+["']?(?:the\s+)?["']?([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)["']?)re");
  for (const Page& p : pages) {
    const std::string text = StraightQuotes(p.text.substr(0, kPartySearchBytes));
    size_t floor = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), defined);
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      const size_t at = static_cast<size_t>(m.position(0));
      const size_t prev_floor = floor;
      floor = at + static_cast<size_t>(m.length(0));
      const std::string role = m[1].matched ? m[1].str() : m[2].str();
      if (role.empty() || IsThingTerm(role) || seen.count(role)) continue;
      const std::string name = NameBefore(text, prev_floor, at);
      if (name.empty() || CountWords(name) > 12 ||
          !std::isupper(static_cast<unsigned char>(name[0])))
        continue;
      const bool in_preamble = preamble.find(name) != std::string::npos;
      if (!IsKnownRole(role) && !HasCompanySuffix(name) && !in_preamble) continue;
      seen.insert(role);
      out.push_back({name, role, p.number});
    }
  }
  return out;
}

namespace {

// Numbers spelled in words ("twenty-one thousand", "sixty", "one hundred
// and five"), with what follows them: a currency ("US dollars", "euros",
// "pounds sterling"), a period ("days", "months"), "per cent".
struct Spelled {
  Fact fact;
  bool has_unit = false;  // a currency, period or per cent followed
};

int WordValue(const std::string& w, bool* scale) {
  static const std::map<std::string, int> small = {
      {"zero", 0},     {"one", 1},      {"two", 2},        {"three", 3},     {"four", 4},
      {"five", 5},     {"six", 6},      {"seven", 7},      {"eight", 8},     {"nine", 9},
      {"ten", 10},     {"eleven", 11},  {"twelve", 12},    {"thirteen", 13}, {"fourteen", 14},
      {"fifteen", 15}, {"sixteen", 16}, {"seventeen", 17}, {"eighteen", 18}, {"nineteen", 19},
      {"twenty", 20},  {"thirty", 30},  {"forty", 40},     {"fifty", 50},    {"sixty", 60},
      {"seventy", 70}, {"eighty", 80},  {"ninety", 90}};
  static const std::map<std::string, int> scales = {
      {"hundred", 100}, {"thousand", 1000}, {"million", 1000000}, {"billion", 1000000000}};
  *scale = false;
  if (auto it = small.find(w); it != small.end()) return it->second;
  if (auto it = scales.find(w); it != scales.end()) {
    *scale = true;
    return it->second;
  }
  return -1;
}

std::vector<Spelled> SpelledValues(const std::string& text) {
  // Words with their offsets; hyphens split words ("twenty-one").
  struct Word {
    std::string lower;
    size_t begin, end;
  };
  std::vector<Word> words;
  for (size_t i = 0; i < text.size();) {
    if (!std::isalpha(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (std::isalpha(static_cast<unsigned char>(text[j])) || text[j] == '.'))
      ++j;
    std::string w = text.substr(i, j - i);
    while (!w.empty() && w.back() == '.') {
      w.pop_back();
      --j;
    }
    for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    words.push_back({w, i, j});
    i = j;
  }
  std::vector<Spelled> out;
  for (size_t k = 0; k < words.size();) {
    bool scale = false;
    if (WordValue(words[k].lower, &scale) < 0 || scale) {
      ++k;
      continue;
    }
    double total = 0, current = 0;
    size_t last = k, n = 0;
    size_t m = k;
    while (m < words.size()) {
      const int v = WordValue(words[m].lower, &scale);
      if (v < 0) {
        // "one hundred and five"
        if (words[m].lower == "and" && m + 1 < words.size() && n > 0 &&
            WordValue(words[m + 1].lower, &scale) >= 0 && !scale) {
          ++m;
          continue;
        }
        break;
      }
      if (!scale) {
        current += v;
      } else if (v == 100) {
        current = (current == 0 ? 1 : current) * 100;
      } else {
        total += (current == 0 ? 1 : current) * v;
        current = 0;
      }
      last = m;
      ++n;
      ++m;
    }
    Spelled s;
    s.fact.kind = FactKind::kNumber;
    s.fact.value = total + current;
    s.fact.begin = words[k].begin;
    s.fact.end = words[last].end;
    size_t next = last + 1;
    auto word_at = [&](size_t i) -> const std::string& {
      static const std::string none;
      return i < words.size() ? words[i].lower : none;
    };
    if (word_at(next) == "us" || word_at(next) == "u.s") ++next;
    const std::string& unit = word_at(next);
    static const std::map<std::string, std::string> currencies = {
        {"dollars", "USD"}, {"dollar", "USD"}, {"euros", "EUR"}, {"euro", "EUR"},
        {"pounds", "GBP"},  {"pound", "GBP"},  {"francs", "CHF"}};
    static const std::map<std::string, std::string> periods = {
        {"day", "day"},     {"days", "day"},     {"week", "week"}, {"weeks", "week"},
        {"month", "month"}, {"months", "month"}, {"year", "year"}, {"years", "year"}};
    if (auto c = currencies.find(unit); c != currencies.end()) {
      s.fact.kind = FactKind::kAmount;
      s.fact.currency = c->second;
      s.fact.end = words[next].end;
      if (word_at(next + 1) == "sterling") s.fact.end = words[next + 1].end;
      s.has_unit = true;
    } else if (auto p = periods.find(unit); p != periods.end()) {
      s.fact.kind = FactKind::kDuration;
      s.fact.unit = p->second;
      s.fact.end = words[next].end;
      s.has_unit = true;
    } else if (unit == "percent" || (unit == "per" && word_at(next + 1) == "cent")) {
      s.fact.kind = FactKind::kPercent;
      s.fact.end = words[unit == "per" ? next + 1 : next].end;
      s.has_unit = true;
    }
    // A lone small word ("one of the parties") is not a value.
    if (s.has_unit || n > 1 || s.fact.value > 10) out.push_back(s);
    k = m;
  }
  return out;
}

}  // namespace

std::vector<ClauseValue> ClauseValues(const Clause& clause) {
  const std::string& text = clause.text;
  std::vector<Fact> facts = FindFacts(text);
  std::vector<Spelled> spelled = SpelledValues(text);
  auto overlaps = [](const Fact& x, const Fact& y) { return x.begin < y.end && y.begin < x.end; };
  // A spelled number that restates its neighbour ("ninety (90) days",
  // "twenty-one thousand US dollars (USD 21,000)") is one value: keep the
  // digits. One the facts misread ("one thousand" of "twenty-one
  // thousand") replaces them.
  std::erase_if(facts, [&](const Fact& f) {
    return std::any_of(spelled.begin(), spelled.end(), [&](const Spelled& s) {
      return overlaps(f, s.fact) && !SameValue(f, s.fact);
    });
  });
  std::erase_if(spelled, [&](const Spelled& s) {
    return std::any_of(facts.begin(), facts.end(), [&](const Fact& f) {
      const bool near = f.begin >= s.fact.end && f.begin <= s.fact.end + 3;
      return (overlaps(f, s.fact) || near) && SameValue(f, s.fact);
    });
  });
  for (const Spelled& s : spelled) facts.push_back(s.fact);
  std::sort(facts.begin(), facts.end(),
            [](const Fact& x, const Fact& y) { return x.begin < y.begin; });
  std::vector<ClauseValue> out;
  for (const Fact& f : facts) {
    // "fifty thousand euros (EUR 50,000)": a value restated right after
    // itself is stated once.
    if (!out.empty() && f.begin >= out.back().fact.end && f.begin <= out.back().fact.end + 3 &&
        SameValue(f, out.back().fact))
      continue;
    out.push_back({f, text.substr(f.begin, f.end - f.begin)});
  }
  return out;
}

}  // namespace ellm::pipelines
