// Two contracts' clauses aligned by what they are about, each pair
// classified from computed values and a word-level diff.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "ellm/base/ascii.h"
#include "ellm/pipelines/contracts.h"
#include "ellm/pipelines/statements.h"

namespace ellm::pipelines {
namespace {

// A pair below this similarity is two different clauses.
constexpr double kMinSimilarity = 0.3;
// Word diffs beyond this many words per side compare as replaced.
constexpr size_t kMaxDiffWords = 3000;

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// What a clause means beyond its values, for "reworded": which parties it
// names in which order, whether it obliges or permits, its negations, and
// its proper names ("England", "Delaware").
struct Meaning {
  std::vector<std::string> roles;
  bool obliges = false, permits = false;
  int negations = 0;
  std::set<std::string> names;
};

bool IsSentenceStartWord(const std::vector<std::string>& words, size_t i) {
  if (i == 0) return true;
  const std::string& prev = words[i - 1];
  return !prev.empty() && (prev.back() == '.' || prev.back() == ':' || prev.back() == ';');
}

std::string StripPunct(const std::string& w) {
  size_t b = 0, e = w.size();
  while (b < e && !std::isalnum(static_cast<unsigned char>(w[b]))) ++b;
  while (e > b && !std::isalnum(static_cast<unsigned char>(w[e - 1]))) --e;
  return w.substr(b, e - b);
}

Meaning MeaningOf(const Clause& c, const std::vector<Party>& parties,
                  const std::set<std::string>& role_words) {
  Meaning m;
  const std::vector<std::string> words = Words(c.text);
  static const std::set<std::string> negation = {"not", "no",      "never",  "neither",
                                                 "nor", "without", "except", "unless"};
  static const std::set<std::string> obligation = {"shall",      "must",     "will",   "agrees",
                                                   "undertakes", "required", "obliged"};
  static const std::set<std::string> permission = {"may", "can", "entitled", "permitted"};
  static const std::set<std::string> common_capitals = {"The",       "This",
                                                        "That",      "These",
                                                        "Such",      "Each",
                                                        "Either",    "Any",
                                                        "All",       "In",
                                                        "If",        "On",
                                                        "For",       "Upon",
                                                        "Party",     "Parties",
                                                        "Agreement", "Clause",
                                                        "Section",   "Schedule",
                                                        "A",         "An",
                                                        "No",        "Neither",
                                                        "Subject",   "Notwithstanding",
                                                        "Where",     "Unless",
                                                        "Nothing",   "It",
                                                        "Its"};
  for (size_t i = 0; i < words.size(); ++i) {
    std::string w = StripPunct(words[i]);
    // "Provider's" is the Provider.
    for (const char* possessive : {"'s", "\xE2\x80\x99s"}) {
      const size_t n = std::char_traits<char>::length(possessive);
      if (w.size() > n && w.compare(w.size() - n, n, possessive) == 0) w.resize(w.size() - n);
    }
    if (w.empty()) continue;
    const std::string lw = AsciiLower(w);
    if (negation.count(lw)) ++m.negations;
    if (obligation.count(lw)) m.obliges = true;
    if (permission.count(lw)) m.permits = true;
    if (role_words.count(w)) {
      m.roles.push_back(w);
      continue;
    }
    // A proper name: capitalised, not an acronym ("IT", "US"), not the
    // first word of a sentence.
    const bool capitalised = w.size() >= 3 && std::isupper(static_cast<unsigned char>(w[0])) &&
                             std::all_of(w.begin() + 1, w.end(), [](char ch) {
                               return !std::isupper(static_cast<unsigned char>(ch));
                             });
    if (capitalised && !IsSentenceStartWord(words, i) && !common_capitals.count(w)) {
      m.names.insert(lw);
    }
  }
  for (const Party& p : parties) {
    for (const std::string& w : Words(p.name)) m.names.erase(AsciiLower(StripPunct(w)));
  }
  return m;
}

// The clause's heading as a clause of its own, for its values.
Clause HeadingOnly(const Clause& c) {
  Clause h = c;
  h.text = c.heading;
  return h;
}

// The heading and the text as one: where a PDF's reflowed paragraph puts
// the line between them differs between two versions of one clause.
Clause Combined(const Clause& c) {
  Clause h = c;
  if (!c.heading.empty()) h.text = c.heading + ". " + c.text;
  return h;
}

std::vector<ValueChange> ValueChanges(const Clause& a, const Clause& b) {
  const std::vector<ClauseValue> va = ClauseValues(a), vb = ClauseValues(b);
  // A value of one side's text that the other side states in its heading
  // is not a change (a heading run into the text on one side only).
  std::vector<ClauseValue> pool_a = va, pool_b = vb;
  for (ClauseValue& v : ClauseValues(HeadingOnly(a))) pool_a.push_back(std::move(v));
  for (ClauseValue& v : ClauseValues(HeadingOnly(b))) pool_b.push_back(std::move(v));
  // As multisets: "24 months" twice in A and once in B is one "24 months"
  // missing from B.
  auto missing_from = [](const std::vector<ClauseValue>& from, const std::vector<ClauseValue>& in) {
    std::vector<const ClauseValue*> out;
    std::vector<bool> used(in.size(), false);
    // Values spelled the same way pair first: "24 months" with "24
    // months", not with "2 years" (the same length of time, stated apart).
    std::vector<bool> matched(from.size(), false);
    for (size_t i = 0; i < from.size(); ++i) {
      for (size_t j = 0; j < in.size() && !matched[i]; ++j) {
        if (!used[j] && from[i].fact.Normalized() == in[j].fact.Normalized() &&
            SameValue(from[i].fact, in[j].fact))
          used[j] = matched[i] = true;
      }
    }
    for (size_t i = 0; i < from.size(); ++i) {
      for (size_t j = 0; j < in.size() && !matched[i]; ++j) {
        if (!used[j] && SameValue(from[i].fact, in[j].fact)) used[j] = matched[i] = true;
      }
      if (!matched[i]) out.push_back(&from[i]);
    }
    return out;
  };
  std::vector<const ClauseValue*> only_a = missing_from(va, pool_b),
                                  only_b = missing_from(vb, pool_a);
  std::vector<ValueChange> out;
  // One value of a kind on each side: a change from one to the other.
  for (auto ia = only_a.begin(); ia != only_a.end();) {
    const FactKind kind = (*ia)->fact.kind;
    auto same_kind = [&](const ClauseValue* v) {
      return v->fact.kind == kind ||
             ((kind == FactKind::kAmount || kind == FactKind::kNumber) &&
              (v->fact.kind == FactKind::kAmount || v->fact.kind == FactKind::kNumber));
    };
    const auto na = std::count_if(only_a.begin(), only_a.end(), same_kind);
    const auto nb = std::count_if(only_b.begin(), only_b.end(), same_kind);
    if (na == 1 && nb == 1) {
      auto ib = std::find_if(only_b.begin(), only_b.end(), same_kind);
      out.push_back({kind, (*ia)->text, (*ib)->text});
      only_b.erase(ib);
      ia = only_a.erase(ia);
    } else {
      ++ia;
    }
  }
  for (const ClauseValue* v : only_a) out.push_back({v->fact.kind, v->text, ""});
  for (const ClauseValue* v : only_b) out.push_back({v->fact.kind, "", v->text});
  return out;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// Unchanged, reworded or changed, with the values that differ and why.
void Classify(const Clause& a, const Clause& b, const std::vector<Party>& parties_a,
              const std::vector<Party>& parties_b, const std::set<std::string>& roles,
              AlignedClause* pair) {
  // The same words under another heading or number are the same clause;
  // so are the same heading and words split differently between the two.
  if (NormalizeWords(a.text) == NormalizeWords(b.text) ||
      NormalizeWords(Combined(a).text) == NormalizeWords(Combined(b).text)) {
    pair->change = ClauseChange::kUnchanged;
    return;
  }
  pair->redline = DiffWords(a.text, b.text);
  pair->values = ValueChanges(a, b);
  // Parties, negations and obligations over heading and text together;
  // proper names of the text, each looked for in all of the other side.
  Meaning ma = MeaningOf(Combined(a), parties_a, roles),
          mb = MeaningOf(Combined(b), parties_b, roles);
  ma.names = MeaningOf(a, parties_a, roles).names;
  mb.names = MeaningOf(b, parties_b, roles).names;
  const std::string words_a = " " + NormalizeWords(Combined(a).text) + " ",
                    words_b = " " + NormalizeWords(Combined(b).text) + " ";
  std::vector<std::string> why;
  if (a.kind == ClauseKind::kPreamble && b.kind == ClauseKind::kPreamble) {
    // The preamble names the parties in any order and style; who is which
    // is compared once for the whole contract (ContractComparison::
    // party_changes), so here only its values count.
    ma.roles.clear();
    mb.roles.clear();
    ma.names.clear();
    mb.names.clear();
  }
  if (!pair->values.empty()) {
    std::vector<std::string> parts;
    for (const ValueChange& v : pair->values) {
      parts.push_back((v.a.empty() ? "(none)" : v.a) + " -> " + (v.b.empty() ? "(none)" : v.b));
    }
    why.push_back("values: " + Join(parts, "; "));
  }
  if (ma.roles != mb.roles) {
    why.push_back("parties: " + Join(ma.roles, ", ") + " -> " + Join(mb.roles, ", "));
  }
  if (ma.negations != mb.negations) why.push_back("negation");
  if (ma.obliges != mb.obliges || ma.permits != mb.permits) why.push_back("obligation");
  std::vector<std::string> gone, added;
  for (const std::string& n : ma.names) {
    if (words_b.find(" " + n + " ") == std::string::npos) gone.push_back(n);
  }
  for (const std::string& n : mb.names) {
    if (words_a.find(" " + n + " ") == std::string::npos) added.push_back(n);
  }
  if (!gone.empty() || !added.empty()) {
    why.push_back("names: " + Join(gone, ", ") + " -> " + Join(added, ", "));
  }
  pair->change = why.empty() ? ClauseChange::kReworded : ClauseChange::kChanged;
  pair->why = Join(why, "; ");
}

// Clause text as stems with their inverse document frequency.
struct Vectors {
  std::vector<std::map<std::string, double>> a, b;
  std::vector<std::set<std::string>> heading_a, heading_b;
};

Vectors Vectorize(const std::vector<Clause>& a, const std::vector<Clause>& b) {
  std::map<std::string, int> df;
  std::vector<std::vector<std::string>> sa, sb;
  for (const Clause& c : a) sa.push_back(ContentStems(c.heading + " " + c.text));
  for (const Clause& c : b) sb.push_back(ContentStems(c.heading + " " + c.text));
  for (const auto* side : {&sa, &sb}) {
    for (const auto& stems : *side) {
      for (const std::string& s : stems) ++df[s];
    }
  }
  const double n = static_cast<double>(sa.size() + sb.size());
  auto weigh = [&](const std::vector<std::string>& stems) {
    std::map<std::string, double> v;
    double norm = 0;
    for (const std::string& s : stems) {
      const double w = std::log((n + 1) / (df[s] + 1)) + 1;
      v[s] = w;
      norm += w * w;
    }
    norm = std::sqrt(norm);
    for (auto& [s, w] : v) w /= norm > 0 ? norm : 1;
    return v;
  };
  Vectors out;
  for (const auto& s : sa) out.a.push_back(weigh(s));
  for (const auto& s : sb) out.b.push_back(weigh(s));
  for (const Clause& c : a) {
    auto h = ContentStems(c.heading);
    out.heading_a.emplace_back(h.begin(), h.end());
  }
  for (const Clause& c : b) {
    auto h = ContentStems(c.heading);
    out.heading_b.emplace_back(h.begin(), h.end());
  }
  return out;
}

double Cosine(const std::map<std::string, double>& x, const std::map<std::string, double>& y) {
  double dot = 0;
  const auto& small = x.size() < y.size() ? x : y;
  const auto& large = x.size() < y.size() ? y : x;
  for (const auto& [s, w] : small) {
    if (auto it = large.find(s); it != large.end()) dot += w * it->second;
  }
  return dot;
}

double Jaccard(const std::set<std::string>& x, const std::set<std::string>& y) {
  if (x.empty() || y.empty()) return 0;
  size_t common = 0;
  for (const std::string& s : x) common += y.count(s);
  return static_cast<double>(common) / static_cast<double>(x.size() + y.size() - common);
}

bool KindsMatch(ClauseKind a, ClauseKind b) {
  auto group = [](ClauseKind k) {
    switch (k) {
      case ClauseKind::kPreamble:
        return 0;
      case ClauseKind::kRecital:
        return 1;
      case ClauseKind::kSignature:
        return 2;
      case ClauseKind::kSchedule:
        return 3;
      default:
        return 4;
    }
  };
  return group(a) == group(b);
}

// The matched pairs (a, b) that keep their order: the longest increasing
// run of b over pairs sorted by a. The others moved.
std::set<int> InOrder(const std::vector<std::pair<int, int>>& pairs) {
  const size_t n = pairs.size();
  std::vector<int> len(n, 1), prev(n, -1);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (pairs[j].second < pairs[i].second && len[j] + 1 > len[i]) {
        len[i] = len[j] + 1;
        prev[i] = static_cast<int>(j);
      }
    }
  }
  std::set<int> keep;
  if (n == 0) return keep;
  int at = static_cast<int>(std::max_element(len.begin(), len.end()) - len.begin());
  while (at >= 0) {
    keep.insert(pairs[static_cast<size_t>(at)].first);
    at = prev[static_cast<size_t>(at)];
  }
  return keep;
}

}  // namespace

const char* ClauseChangeName(ClauseChange change) {
  switch (change) {
    case ClauseChange::kUnchanged:
      return "unchanged";
    case ClauseChange::kReworded:
      return "reworded";
    case ClauseChange::kChanged:
      return "changed";
    case ClauseChange::kAdded:
      return "added";
    case ClauseChange::kRemoved:
      return "removed";
  }
  return "changed";
}

std::vector<WordEdit> DiffWords(std::string_view a, std::string_view b) {
  const std::vector<std::string> wa = Words(a), wb = Words(b);
  std::vector<WordEdit> out;
  auto push = [&](char op, const std::string& w) {
    if (!out.empty() && out.back().op == op) {
      out.back().text += ' ';
      out.back().text += w;
    } else {
      out.push_back({op, w});
    }
  };
  if (wa.size() > kMaxDiffWords || wb.size() > kMaxDiffWords) {
    if (!wa.empty()) out.push_back({'-', std::string(a)});
    if (!wb.empty()) out.push_back({'+', std::string(b)});
    return out;
  }
  const size_t n = wa.size(), m = wb.size();
  // lcs[i][j]: the longest common subsequence of wa[i..] and wb[j..].
  std::vector<uint16_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint16_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      at(i, j) = wa[i] == wb[j] ? static_cast<uint16_t>(at(i + 1, j + 1) + 1)
                                : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && wa[i] == wb[j]) {
      push('=', wa[i]);
      ++i;
      ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      push('-', wa[i++]);  // deletions before insertions
    } else {
      push('+', wb[j++]);
    }
  }
  return out;
}

int ContractComparison::Count(ClauseChange change) const {
  return static_cast<int>(std::count_if(
      aligned.begin(), aligned.end(), [&](const AlignedClause& x) { return x.change == change; }));
}

int ContractComparison::Moved() const {
  return static_cast<int>(std::count_if(aligned.begin(), aligned.end(),
                                        [](const AlignedClause& x) { return x.moved; }));
}

ContractComparison CompareContracts(const std::vector<Page>& pages_a,
                                    const std::vector<Page>& pages_b) {
  ContractComparison c;
  c.a = SplitClauses(pages_a);
  c.b = SplitClauses(pages_b);
  c.parties_a = FindParties(pages_a);
  c.parties_b = FindParties(pages_b);
  std::set<std::string> roles;
  for (const auto* parties : {&c.parties_a, &c.parties_b}) {
    for (const Party& p : *parties) roles.insert(p.role);
  }
  // Who is which: a role's party in A and in B.
  for (const std::string& role : roles) {
    auto name_of = [&](const std::vector<Party>& parties) -> std::string {
      for (const Party& p : parties) {
        if (p.role == role) return p.name;
      }
      return "";
    };
    const std::string na = name_of(c.parties_a), nb = name_of(c.parties_b);
    if (NormalizeWords(na) != NormalizeWords(nb)) c.party_changes.push_back({role, na, nb});
  }
  const Vectors v = Vectorize(c.a, c.b);
  struct Candidate {
    double score;
    int a, b;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < c.a.size(); ++i) {
    for (size_t j = 0; j < c.b.size(); ++j) {
      if (!KindsMatch(c.a[i].kind, c.b[j].kind)) continue;
      double score = Cosine(v.a[i], v.b[j]);
      if (!v.heading_a[i].empty() && !v.heading_b[j].empty()) {
        score = 0.6 * score + 0.4 * Jaccard(v.heading_a[i], v.heading_b[j]);
      }
      if (NormalizeWords(c.a[i].text) == NormalizeWords(c.b[j].text) && !c.a[i].text.empty()) {
        score = 1.0 + score;  // identical text: matched first
      }
      if (score >= kMinSimilarity) {
        candidates.push_back({score, static_cast<int>(i), static_cast<int>(j)});
      }
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) { return x.score > y.score; });
  std::vector<int> match_a(c.a.size(), -1), match_b(c.b.size(), -1);
  std::vector<double> score_a(c.a.size(), 0);
  for (const Candidate& k : candidates) {
    if (match_a[static_cast<size_t>(k.a)] >= 0 || match_b[static_cast<size_t>(k.b)] >= 0) continue;
    match_a[static_cast<size_t>(k.a)] = k.b;
    match_b[static_cast<size_t>(k.b)] = k.a;
    score_a[static_cast<size_t>(k.a)] = std::min(1.0, k.score);
  }
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < c.a.size(); ++i) {
    if (match_a[i] >= 0) pairs.emplace_back(static_cast<int>(i), match_a[i]);
  }
  const std::set<int> in_order = InOrder(pairs);
  // Each entry with a position in B's order: B's index, and for a removed
  // clause the position after its predecessor in A that has a match.
  std::vector<std::pair<double, AlignedClause>> placed;
  for (size_t j = 0; j < c.b.size(); ++j) {
    AlignedClause x;
    x.b = static_cast<int>(j);
    x.a = match_b[j];
    if (x.a < 0) {
      x.change = ClauseChange::kAdded;
    } else {
      x.similarity = score_a[static_cast<size_t>(x.a)];
      x.moved = in_order.count(x.a) == 0;
      Classify(c.a[static_cast<size_t>(x.a)], c.b[j], c.parties_a, c.parties_b, roles, &x);
    }
    placed.emplace_back(static_cast<double>(j), std::move(x));
  }
  double after = -1;
  for (size_t i = 0; i < c.a.size(); ++i) {
    if (match_a[i] >= 0) {
      after = match_a[i];
      continue;
    }
    AlignedClause x;
    x.a = static_cast<int>(i);
    x.change = ClauseChange::kRemoved;
    after += 1e-3;
    placed.emplace_back(after + 0.5, std::move(x));
  }
  std::stable_sort(placed.begin(), placed.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [pos, x] : placed) c.aligned.push_back(std::move(x));
  return c;
}

}  // namespace ellm::pipelines
