// The key-term table as a view over a clause comparison (contracts.h
// KeyTermsView): computed from each contract's own clauses and values, for
// any kind of contract, with no model.
#include <algorithm>
#include <cctype>
#include <regex>
#include <string>
#include <string_view>

#include "ellm/base/ascii.h"
#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
namespace {

using ordered_json = nlohmann::ordered_json;

// A term: the values of `kinds` in the clauses about it. A keyword ending in
// '*' matches any word starting with it ("terminat*": terminate,
// termination); others match whole words or phrases. Terms are tried in
// this order and a value goes to the first whose clause it is in and whose
// kinds take it: a fee in the liability clause is the liability cap's.
struct TermDef {
  const char* name;
  const char* label;
  std::vector<FactKind> kinds;  // empty: the governing law (text)
  std::vector<std::string_view> keywords;
  bool preamble_only = false;  // the date the contract was made
};

const std::vector<TermDef>& Terms() {
  using K = FactKind;
  static const std::vector<TermDef> kTerms = {
      {"signed",
       "Date of agreement",
       {K::kDate},
       {"made", "dated", "entered into", "effective"},
       true},
      {"governing_law", "Governing law", {}, {"governed", "governing law"}},
      {"liability_cap", "Liability cap", {K::kAmount, K::kPercent}, {"liabilit*", "liable"}},
      {"termination_notice", "Termination notice", {K::kDuration}, {"terminat*", "notice period"}},
      {"confidentiality", "Confidentiality period", {K::kDuration}, {"confidential*"}},
      {"interest", "Interest rate", {K::kPercent}, {"interest"}},
      {"price",
       "Amounts payable",
       {K::kAmount},
       {"price", "fee", "fees", "pay", "payment*", "consideration", "rent", "remuneration",
        "salary", "compensation", "charges", "principal", "loan amount", "purchase price"}},
      {"payment_terms", "Payment terms", {K::kDuration}, {"pay", "payment*", "invoice*"}},
      {"delivery", "Delivery date", {K::kDate}, {"deliver*"}},
      {"term",
       "Term",
       {K::kDuration, K::kDate},
       {"term", "duration", "commence*", "expir*", "renew*"}},
  };
  return kTerms;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Whether `keyword` occurs in lowercase `text` as described at TermDef.
bool HasKeyword(const std::string& text, std::string_view keyword) {
  const bool prefix = keyword.ends_with('*');
  if (prefix) keyword.remove_suffix(1);
  for (size_t at = text.find(keyword); at != std::string::npos; at = text.find(keyword, at + 1)) {
    const size_t end = at + keyword.size();
    if (at > 0 && IsWordChar(text[at - 1])) continue;
    if (!prefix && end < text.size() && IsWordChar(text[end])) continue;
    return true;
  }
  return false;
}

// What a clause is about: its heading, its parents' headings ("6.1" under
// "6. TERMINATION") and its first sentence ("2. Fees" about paying: "The
// Customer shall pay ... within 30 days of invoice").
std::string Subject(const Clause& c, const std::string& parents) {
  const size_t stop = c.text.find(". ");
  return AsciiLower(parents + " | " + c.heading + " | " +
                    std::string(std::string_view(c.text).substr(0, std::min(c.text.size(), stop))));
}

bool About(const Clause& c, const std::string& parents, const TermDef& t) {
  if (t.preamble_only && c.kind != ClauseKind::kPreamble) return false;
  // The preamble's heading is the contract's title: its words say when.
  const std::string subject =
      t.preamble_only ? AsciiLower(std::string_view(c.text).substr(0, 400)) : Subject(c, parents);
  return std::any_of(t.keywords.begin(), t.keywords.end(),
                     [&](std::string_view k) { return HasKeyword(subject, k); });
}

// "the laws of England and Wales" -> "England and Wales".
std::vector<std::string> LawsIn(const std::string& text) {
  static const std::regex kLaw(
      R"(laws? of (?:the )?(?:State of |Republic of |Commonwealth of )?([A-Z][A-Za-z-]*(?: (?:and|of) [A-Z][A-Za-z-]*| [A-Z][A-Za-z-]*){0,4}))");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), kLaw), end; it != end; ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

bool Same(const TermValue& x, const TermValue& y) {
  if (x.fact.has_value() != y.fact.has_value()) return false;
  return x.fact ? SameValue(*x.fact, *y.fact) : NormalizeWords(x.text) == NormalizeWords(y.text);
}

void Add(std::vector<TermValue>* side, TermValue v) {
  if (std::none_of(side->begin(), side->end(), [&](const TermValue& o) { return Same(o, v); })) {
    side->push_back(std::move(v));
  }
}

std::string ClauseName(const Clause& c) {
  if (!c.number.empty()) return c.number + (c.heading.empty() ? "" : " " + c.heading);
  return c.heading.empty() ? ClauseKindName(c.kind) : c.heading;
}

// Each term's values in one contract's clauses.
std::vector<std::vector<TermValue>> Collect(const std::vector<Clause>& clauses) {
  const std::vector<TermDef>& terms = Terms();
  std::vector<std::vector<TermValue>> out(terms.size());
  std::vector<std::string> headings;  // [level - 1]: the open clause's heading at that level
  for (const Clause& c : clauses) {
    const size_t level = static_cast<size_t>(std::clamp(c.level, 1, 8));
    headings.resize(level);
    std::string parents;
    for (size_t l = 0; l + 1 < level; ++l) parents += headings[l] + " ";
    headings[level - 1] = c.heading;
    std::vector<bool> about(terms.size());
    for (size_t t = 0; t < terms.size(); ++t) about[t] = About(c, parents, terms[t]);
    for (const ClauseValue& v : ClauseValues(c)) {
      for (size_t t = 0; t < terms.size(); ++t) {
        const std::vector<FactKind>& kinds = terms[t].kinds;
        if (!about[t] || std::find(kinds.begin(), kinds.end(), v.fact.kind) == kinds.end()) {
          continue;
        }
        Add(&out[t], {v.text, v.fact, c.first_page, ClauseName(c)});
        break;
      }
    }
    for (size_t t = 0; t < terms.size(); ++t) {
      if (!about[t] || !terms[t].kinds.empty()) continue;
      for (std::string& law : LawsIn(c.text)) {
        Add(&out[t], {std::move(law), std::nullopt, c.first_page, ClauseName(c)});
      }
    }
  }
  return out;
}

// Same when each side's values are the other's.
std::string StatusOf(const std::vector<TermValue>& a, const std::vector<TermValue>& b) {
  if (a.empty()) return "only in B";
  if (b.empty()) return "only in A";
  auto covered = [](const std::vector<TermValue>& x, const std::vector<TermValue>& y) {
    return std::all_of(x.begin(), x.end(), [&](const TermValue& v) {
      return std::any_of(y.begin(), y.end(), [&](const TermValue& w) { return Same(v, w); });
    });
  };
  return covered(a, b) && covered(b, a) ? "same" : "different";
}

std::string Cell(const std::vector<TermValue>& values, const char* side) {
  std::string out;
  for (const TermValue& v : values) {
    if (!out.empty()) out += "; ";
    out += v.text;
    if (v.page > 0) out += std::string(" (") + side + " p." + std::to_string(v.page) + ")";
  }
  for (char& c : out) {
    if (c == '|' || c == '\n') c = ' ';
  }
  return out.empty() ? "—" : out;
}

ordered_json SideJson(const std::vector<TermValue>& values) {
  ordered_json all = ordered_json::array();
  for (const TermValue& v : values) {
    all.push_back({{"text", v.text},
                   {"kind", v.fact ? FactKindName(v.fact->kind) : "text"},
                   {"page", v.page},
                   {"clause", v.clause}});
  }
  // The first value in the single-value form of the model-filled table.
  const ordered_json none(nullptr);
  ordered_json side = {{"value", values.empty() ? none : ordered_json(values[0].text)},
                       {"verified", !values.empty()},
                       {"page", values.empty() ? none : ordered_json(values[0].page)},
                       {"source", values.empty() ? none : ordered_json(values[0].text)},
                       {"values", std::move(all)}};
  return side;
}

}  // namespace

std::vector<KeyTermRow> KeyTermsView(const ContractComparison& c) {
  std::vector<KeyTermRow> rows;
  // One row per role either contract defines, in the order A then B
  // defines them.
  std::vector<std::string> roles;
  for (const auto* parties : {&c.parties_a, &c.parties_b}) {
    for (const Party& p : *parties) {
      if (std::find(roles.begin(), roles.end(), p.role) == roles.end()) roles.push_back(p.role);
    }
  }
  for (const std::string& role : roles) {
    KeyTermRow row{AsciiLower(role), role, "", {}, {}};
    for (const Party& p : c.parties_a) {
      if (p.role == role) row.a.push_back({p.name, std::nullopt, p.page, "parties"});
    }
    for (const Party& p : c.parties_b) {
      if (p.role == role) row.b.push_back({p.name, std::nullopt, p.page, "parties"});
    }
    row.status = StatusOf(row.a, row.b);
    rows.push_back(std::move(row));
  }
  const std::vector<TermDef>& terms = Terms();
  std::vector<std::vector<TermValue>> a = Collect(c.a), b = Collect(c.b);
  for (size_t t = 0; t < terms.size(); ++t) {
    if (a[t].empty() && b[t].empty()) continue;  // not a term of these contracts
    rows.push_back(
        {terms[t].name, terms[t].label, StatusOf(a[t], b[t]), std::move(a[t]), std::move(b[t])});
  }
  return rows;
}

std::string KeyTermsMarkdown(const std::vector<KeyTermRow>& rows) {
  std::string out = "| Term | A | B | |\n|---|---|---|---|\n";
  for (const KeyTermRow& r : rows) {
    out += "| " + r.label + " | " + Cell(r.a, "A") + " | " + Cell(r.b, "B") + " | " + r.status +
           " |\n";
  }
  return out;
}

nlohmann::ordered_json KeyTermsJson(const std::vector<KeyTermRow>& rows) {
  ordered_json out = ordered_json::array();
  for (const KeyTermRow& r : rows) {
    out.push_back({{"field", r.name},
                   {"label", r.label},
                   {"status", r.status},
                   {"a", SideJson(r.a)},
                   {"b", SideJson(r.b)}});
  }
  return out;
}

std::string KeyTermsDifferences(const std::vector<KeyTermRow>& rows) {
  std::string out;
  auto said = [](const std::vector<TermValue>& v) {
    std::string s;
    for (const TermValue& x : v) s += (s.empty() ? "" : ", ") + x.text;
    return s.empty() ? std::string("not stated") : s;
  };
  for (const KeyTermRow& r : rows) {
    if (r.status == "same") continue;
    out += "- " + r.label + ": " + said(r.a) + " in A, " + said(r.b) + " in B.\n";
  }
  return out;
}

}  // namespace ellm::pipelines
