#include "ellm/pipelines/backbone.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "ellm/base/ascii.h"
#include "ellm/ingest/markdown_table.h"
#include "ellm/pipelines/statements.h"

namespace ellm::pipelines {
namespace {

struct Candidate {
  std::string text;
  int page = 0;
  std::vector<std::string> stems;
  std::string lower;   // for the cues
  bool table = false;  // a table row, "label - column: value; ..."
};

constexpr size_t kMinWords = 6;
constexpr size_t kMaxWords = 60;
constexpr size_t kMaxSentenceBytes = 480;

size_t Words(std::string_view s) {
  size_t n = 0;
  bool in = false;
  for (char c : s) {
    const bool space = c == ' ' || c == '\t';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

// Whitespace runs collapsed to one space, none at the ends.
std::string Clean(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\t' || c == '\r' || c == '\n') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Mostly words: letters make up at least half its bytes, and it starts
// with a capital, a digit or a quote (not a sentence's tail cut by a page).
bool LooksLikeSentence(const std::string& s) {
  size_t letters = 0;
  for (unsigned char c : s) letters += std::isalpha(c) || c >= 0x80;
  if (letters * 2 < s.size()) return false;
  const unsigned char first = static_cast<unsigned char>(s[0]);
  if (!(std::isupper(first) || std::isdigit(first) || first == '"' || first >= 0x80)) return false;
  const char last = s.back();
  return last == '.' || last == '!' || last == '?' || last == ')' || last == '"';
}

// A table's data row with its figures as a figure candidate, each figure
// with its column's label: "Revenue - 2022: 1,204; 2023: 1,388". nullopt
// for a row without a label or a figure.
std::optional<Candidate> TableRowCandidate(const std::vector<std::string>& header,
                                           const std::vector<std::string>& row, int page) {
  if (row.empty() || row[0].empty() || !FiguresIn(row[0]).empty()) return std::nullopt;
  std::string text = row[0];
  std::string labels = row[0];
  bool any = false;
  for (size_t c = 1; c < row.size(); ++c) {
    if (FiguresIn(row[c]).empty()) continue;
    const std::string column = c < header.size() ? header[c] : "";
    text += (any ? "; " : " \u2014 ") + (column.empty() ? "" : column + ": ") + row[c];
    labels += " " + column;
    any = true;
  }
  if (!any || text.size() > kMaxSentenceBytes) return std::nullopt;
  Candidate c;
  c.stems = ContentStems(labels);
  c.lower = AsciiLower(text);
  c.text = std::move(text);
  c.page = page;
  c.table = true;
  return c;
}

std::vector<Candidate> Candidates(const std::vector<Page>& pages) {
  std::vector<Candidate> out;
  for (const Page& page : pages) {
    size_t at = 0;
    std::vector<std::string> header;  // of the table being read; empty: none
    while (at < page.text.size() && out.size() < kMaxBackboneCandidates) {
      size_t nl = page.text.find('\n', at);
      if (nl == std::string::npos) nl = page.text.size();
      const std::string line = page.text.substr(at, nl - at);
      at = nl + 1;
      if (const auto row = ingest::ParseMarkdownRow(line)) {
        if (ingest::IsMarkdownRule(line)) continue;
        const bool rule_next = at < page.text.size() && ingest::IsMarkdownRule(page.text.substr(
                                                            at, page.text.find('\n', at) - at));
        if (header.empty() || rule_next) {
          header = *row;  // a header: the rule follows it
        } else if (auto c = TableRowCandidate(header, *row, page.number)) {
          out.push_back(std::move(*c));
        }
        continue;
      }
      header.clear();
      if (!IsProse(line)) continue;
      for (const std::string& raw : SplitSentences(line)) {
        std::string s = Clean(raw);
        const size_t words = Words(s);
        if (words < kMinWords || words > kMaxWords || s.size() > kMaxSentenceBytes) continue;
        if (!LooksLikeSentence(s)) continue;
        Candidate c;
        c.stems = ContentStems(s);
        if (c.stems.size() < 4) continue;
        c.lower = AsciiLower(s);
        c.text = std::move(s);
        c.page = page.number;
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// tf x idf^2 of its distinct stems over the square root of their count,
// scaled so the best candidate has 1.
std::vector<double> Centrality(const std::vector<Candidate>& cands) {
  std::unordered_map<std::string, int> tf, df;
  for (const Candidate& c : cands) {
    std::unordered_set<std::string> seen;
    for (const std::string& s : c.stems) {
      ++tf[s];
      if (seen.insert(s).second) ++df[s];
    }
  }
  const double n = static_cast<double>(cands.size());
  std::vector<double> out(cands.size(), 0);
  double best = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    std::unordered_set<std::string> seen;
    double sum = 0;
    for (const std::string& s : cands[i].stems) {
      if (!seen.insert(s).second || tf[s] < 2) continue;  // a word used once carries nothing
      const double idf = std::log((n + 1) / df[s]);
      sum += std::log(1.0 + tf[s]) * idf * idf;
    }
    out[i] = sum / std::sqrt(static_cast<double>(cands[i].stems.size()));
    best = std::max(best, out[i]);
  }
  if (best > 0) {
    for (double& v : out) v /= best;
  }
  return out;
}

bool HasAny(const std::string& lower, std::initializer_list<const char*> cues) {
  for (const char* cue : cues) {
    if (lower.find(cue) != std::string::npos) return true;
  }
  return false;
}

// "this <document> <verb>", "the purpose of this <document>", "this
// <document> is intended/designed": the document saying what it is for.
bool SaysWhatItIsFor(const std::string& lower) {
  static const char* const kNouns[] = {"manual",   "report",   "document",      "guide",
                                       "paper",    "book",     "article",       "page",
                                       "chapter",  "study",    "specification", "agreement",
                                       "handbook", "tutorial", "note",          "review"};
  static const char* const kVerbs[] = {
      "describes",   "explains", "covers",     "presents",   "provides",   "documents",
      "gives",       "sets out", "introduces", "discusses",  "summarises", "summarizes",
      "examines",    "reviews",  "outlines",   "shows",      "aims",       "is intended",
      "is designed", "is meant", "is about",   "is a guide", "contains",   "focuses"};
  for (const char* noun : kNouns) {
    const std::string subject = std::string("this ") + noun + " ";
    for (size_t at = lower.find(subject); at != std::string::npos;
         at = lower.find(subject, at + 1)) {
      if (at >= 15 && lower.compare(at - 15, 15, "the purpose of ") == 0) return true;
      const std::string_view rest = std::string_view(lower).substr(at + subject.size());
      for (const char* verb : kVerbs) {
        if (rest.starts_with(verb)) return true;
      }
    }
  }
  return false;
}

// Legal front matter and notices: never what a summary should quote. A
// contract's own terms (its obligations) may speak of licences and
// warranties.
bool Boilerplate(const std::string& lower, BackbonePart part) {
  if (part == BackbonePart::kObligations) {
    return HasAny(lower, {"copyright", "all rights reserved", "isbn"});
  }
  return HasAny(lower, {"permission is granted", "copyright", "all rights reserved", "licen",
                        "warranty", "trademark", "isbn", "without fee", "verbatim cop"});
}

// How strongly a sentence speaks to `part` by its words (0: not at all).
double Cue(const Candidate& c, BackbonePart part) {
  switch (part) {
    case BackbonePart::kPurpose: {
      // "This manual describes ...", "The purpose of this report is ...".
      const bool states = SaysWhatItIsFor(c.lower);
      const bool aim = HasAny(c.lower, {"intended", "purpose", "aim", "goal", "introduc",
                                        "overview", "is about", "shows how", "sets out"});
      return (states ? 1.5 : 0.0) + (aim ? 0.5 : 0.0);
    }
    case BackbonePart::kFigures:
      return HasAny(c.lower,
                    {"total",     "increase",  "decrease", "grew",    "rose",    "fell",
                     "revenue",   "million",   "billion",  "percent", "%",       "average",
                     "maximum",   "minimum",   "default",  "limit",   "at most", "at least",
                     "more than", "less than", "up to"})
                 ? 0.5
                 : 0.0;
    case BackbonePart::kRisks:
      return (HasAny(c.lower, {"risk", "warning", "caution", "danger", "hazard", "beware",
                               "vulnerab", "uncertain", "exposure", "liabilit", "breach"})
                  ? 1.0
                  : 0.0) +
             (HasAny(c.lower, {"must not",
                               "should not",
                               "do not",
                               "cannot",
                               "can not",
                               "never",
                               "fail",
                               "error",
                               "problem",
                               "limitation",
                               "not recommended",
                               "deprecated",
                               "careful",
                               "corrupt",
                               "lose",
                               "loss",
                               "unsafe",
                               "not supported",
                               "may not",
                               "is not guaranteed"})
                  ? 0.6
                  : 0.0);
    case BackbonePart::kConclusions:
      return (HasAny(c.lower, {"in conclusion", "to conclude", "conclude", "in summary", "overall",
                               "in short", "therefore", "we recommend", "recommend", "as a result",
                               "in general", "thus", "to sum up", "the result is", "finding"})
                  ? 1.0
                  : 0.0) +
             (HasAny(c.lower, {"expect", "outlook", "future", "next step", "plans to",
                               "will continue", "going forward", "in the coming"})
                  ? 0.6
                  : 0.0);
    case BackbonePart::kObligations:
      return HasAny(c.lower, {" shall ", " must ", " agrees to ", " undertakes ", " will pay",
                              " will provide", " will deliver", " is responsible for",
                              " are responsible for", " is obliged", " obligat"})
                 ? 1.0
                 : 0.0;
  }
  return 0;
}

// The candidate's score for `part`, or a negative value when it may not
// serve it at all.
double Score(const Candidate& c, double central, double position, BackbonePart part) {
  if (Boilerplate(c.lower, part)) return -1;
  if (c.table) {
    // A labelled figure of a table: a key figure, never a statement.
    if (part != BackbonePart::kFigures) return -1;
    return 0.6 * central + 0.3 * (1 - position) + 0.2 + Cue(c, part);
  }
  const double cue = Cue(c, part);
  switch (part) {
    case BackbonePart::kPurpose:
      if (cue == 0 && position > 0.25) return -1;
      return 0.5 * central + 0.5 * (1 - position) + cue;
    case BackbonePart::kFigures: {
      const size_t figures = FiguresIn(c.text).size();
      if (figures == 0 || figures * 3 > Words(c.text)) return -1;  // a row of numbers
      return 0.6 * central + 0.3 * (1 - position) + 0.1 * std::min<size_t>(figures, 3) + cue;
    }
    case BackbonePart::kRisks:
      if (cue == 0) return -1;
      return 0.6 * central + cue;
    case BackbonePart::kConclusions:
      if (cue == 0 && position < 0.75) return -1;
      return 0.5 * central + 0.5 * position + cue;
    case BackbonePart::kObligations:
      if (cue == 0) return -1;
      return 0.6 * central + 0.2 * (1 - position) + cue;
  }
  return -1;
}

// Whether stems `a` and `b` share three stems and 60% of the smaller set
// (two figure sentences may share "EUR" and "million" and say different
// things).
bool Overlaps(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::unordered_set<std::string> sb(b.begin(), b.end());
  const std::unordered_set<std::string> sa(a.begin(), a.end());
  size_t shared = 0;
  for (const std::string& s : sa) shared += sb.count(s);
  return shared >= 3 && shared * 5 >= std::min(sa.size(), sb.size()) * 3;
}

}  // namespace

std::optional<BackbonePart> ParseBackbonePart(std::string_view name) {
  for (BackbonePart p : {BackbonePart::kPurpose, BackbonePart::kFigures, BackbonePart::kRisks,
                         BackbonePart::kConclusions, BackbonePart::kObligations}) {
    if (name == BackbonePartName(p)) return p;
  }
  return std::nullopt;
}

const char* BackbonePartName(BackbonePart part) {
  switch (part) {
    case BackbonePart::kPurpose:
      return "purpose";
    case BackbonePart::kFigures:
      return "figures";
    case BackbonePart::kRisks:
      return "risks";
    case BackbonePart::kConclusions:
      return "conclusions";
    case BackbonePart::kObligations:
      return "obligations";
  }
  return "";
}

std::vector<std::vector<ChosenSentence>> ChooseForParts(
    const std::vector<Page>& pages, const std::vector<BackboneWant>& wants,
    std::vector<std::vector<std::string>>* chosen) {
  std::vector<std::vector<ChosenSentence>> out(wants.size());
  const std::vector<Candidate> cands = Candidates(pages);
  if (cands.empty()) return out;
  const std::vector<double> central = Centrality(cands);
  struct Option {
    double score;
    size_t want, cand;
  };
  std::vector<Option> options;
  for (size_t w = 0; w < wants.size(); ++w) {
    for (size_t i = 0; i < cands.size() && wants[w].k > 0; ++i) {
      const double position =
          cands.size() > 1 ? static_cast<double>(i) / static_cast<double>(cands.size() - 1) : 0;
      const double score = Score(cands[i], central[i], position, wants[w].part);
      if (score >= 0) options.push_back({score, w, i});
    }
  }
  // The best (sentence, part) pairs first: a sentence goes to the part it
  // serves best, then no other takes it or one that says the same.
  std::stable_sort(options.begin(), options.end(),
                   [](const Option& a, const Option& b) { return a.score > b.score; });
  std::vector<std::vector<std::string>> local;
  std::vector<std::vector<std::string>>& before = chosen != nullptr ? *chosen : local;
  std::vector<std::vector<std::pair<size_t, double>>> picked(wants.size());
  for (const Option& o : options) {
    if (picked[o.want].size() >= wants[o.want].k) continue;
    const Candidate& c = cands[o.cand];
    bool repeats = false;
    for (const auto& stems : before) repeats = repeats || Overlaps(c.stems, stems);
    if (repeats) continue;
    before.push_back(c.stems);
    picked[o.want].push_back({o.cand, o.score});
  }
  for (size_t w = 0; w < wants.size(); ++w) {
    std::sort(picked[w].begin(), picked[w].end());  // document order
    for (const auto& [i, score] : picked[w]) {
      out[w].push_back({cands[i].text, cands[i].page, score, cands[i].table});
    }
  }
  return out;
}

std::vector<ChosenSentence> ChooseSentences(const std::vector<Page>& pages, BackbonePart part,
                                            size_t k,
                                            std::vector<std::vector<std::string>>* chosen) {
  return ChooseForParts(pages, {{part, k}}, chosen)[0];
}

std::string QuotedLines(const std::vector<ChosenSentence>& sentences) {
  std::string out;
  for (const ChosenSentence& s : sentences) {
    if (!out.empty()) out += "\n";
    if (s.table) {
      out +=
          "- " + s.text + (s.page > 0 ? " [p. " + std::to_string(s.page) + ", table]" : " [table]");
      continue;
    }
    out += "- \u201c" + s.text + "\u201d";
    if (s.page > 0) out += " [p. " + std::to_string(s.page) + "]";
  }
  return out;
}

}  // namespace ellm::pipelines
