#include "ellm/pipelines/statements.h"

#include "ellm/pipelines/provenance.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <unordered_set>

namespace ellm::pipelines {
namespace {

bool IsWordByte(unsigned char c) { return std::isalnum(c) || c >= 0x80; }

// Words that say nothing a page could support: function words and the
// words a summary uses about itself.
const std::unordered_set<std::string>& StopWords() {
  static const std::unordered_set<std::string> kWords = {
      "about",     "above",     "after",    "again",     "against",  "also",       "although",
      "among",     "another",   "because",  "been",      "before",   "being",      "below",
      "between",   "both",      "but",      "can",       "could",    "does",       "doing",
      "during",    "each",      "either",   "even",      "every",    "further",    "have",
      "having",    "here",      "however",  "into",      "its",      "itself",     "just",
      "many",      "more",      "most",     "much",      "must",     "neither",    "only",
      "other",     "over",      "same",     "several",   "should",   "since",      "some",
      "such",      "than",      "that",     "their",     "them",     "then",       "there",
      "these",     "they",      "this",     "those",     "through",  "under",      "until",
      "upon",      "very",      "was",      "were",      "what",     "when",       "where",
      "whether",   "which",     "while",    "will",      "with",     "within",     "without",
      "would",     "your",      "the",      "and",       "for",      "are",        "not",
      "has",       "had",       "from",     "all",       "any",      "may",        "one",
      "two",       "how",       "who",      "why",       "our",      "out",        "own",
      "report",    "reports",   "document", "documents", "summary",  "summarizes", "summarises",
      "describes", "described", "describe", "provides",  "provide",  "provided",   "discusses",
      "discuss",   "section",   "sections", "page",      "pages",    "overview",   "main",
      "key",       "also",      "well",     "include",   "includes", "including",  "use",
      "used",      "uses",      "using",    "make",      "makes",    "made",       "like"};
  return kWords;
}

std::string Stem(std::string w) {
  for (const char* suffix :
       {"ations", "ation", "ings", "ing", "ied", "ies", "ed", "es", "ly", "s"}) {
    const size_t n = std::char_traits<char>::length(suffix);
    if (w.size() >= n + 3 && w.compare(w.size() - n, n, suffix) == 0) {
      w.resize(w.size() - n);
      break;
    }
  }
  if (w.size() > 6) w.resize(6);
  return w;
}

std::unordered_set<std::string> StemSet(std::string_view text) {
  std::vector<std::string> v = ContentStems(text);
  return {v.begin(), v.end()};
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Common words of one or two letters, which end sentences as often as any.
bool ShortWord(std::string_view w) {
  static const std::unordered_set<std::string_view> kWords = {
      "a",  "i",  "am", "an", "as", "at", "be", "by", "do", "go", "he", "if", "in",
      "is", "it", "me", "my", "no", "of", "on", "or", "so", "to", "up", "us", "we"};
  return kWords.count(w) > 0;
}

// A line's sentences: split after ". ", "! ", "? " (a decimal point has no
// space after it, an abbreviation is short); each keeps its punctuation.
std::vector<std::string> Sentences(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const char c = line[i];
    if ((c == '.' || c == '!' || c == '?') && line[i + 1] == ' ') {
      // "p. 4", "e.g. ", "No. 7": a word of one or two letters before a
      // period is an abbreviation, unless it is a common short word and a
      // capital follows ("... unlikely to. Apparently ...").
      size_t w = i;
      while (w > start && std::isalpha(static_cast<unsigned char>(line[w - 1]))) --w;
      if (c == '.' && i - w >= 1 && i - w <= 2 &&
          !(ShortWord(std::string_view(line).substr(w, i - w)) && i + 2 < line.size() &&
            std::isupper(static_cast<unsigned char>(line[i + 2])))) {
        continue;
      }
      out.push_back(line.substr(start, i + 1 - start));
      start = i + 2;
    }
  }
  if (start < line.size()) out.push_back(line.substr(start));
  return out;
}

}  // namespace

std::vector<std::string> ContentStems(std::string_view text) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t i = 0;
  while (i < text.size()) {
    if (!IsWordByte(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    std::string w;
    while (j < text.size() && IsWordByte(static_cast<unsigned char>(text[j]))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(text[j])));
      ++j;
    }
    i = j;
    const bool digits = std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(c); });
    // Numbers are the figure check's; short words carry little.
    if (digits || w.size() < 3 || StopWords().count(w)) continue;
    std::string s = Stem(w);
    if (seen.insert(s).second) out.push_back(s);
  }
  return out;
}

namespace {

// A sentence's stems and figures; each page's stems and stated values
// (facts.h StatedValues).
std::optional<Support> BestSupport(const std::vector<std::string>& stems,
                                   const std::vector<Fact>& figures, const std::vector<Page>& pages,
                                   const std::vector<std::unordered_set<std::string>>& sets,
                                   const std::vector<std::vector<Fact>>& stated, double min_share) {
  if (stems.empty()) return std::nullopt;
  std::optional<Support> best;
  auto consider = [&](size_t a, size_t b) {
    // The cited pages must state each figure: a sentence is cited where its
    // figures stand, or nowhere.
    for (const Fact& f : figures) {
      if (!StatesFigure(stated[a], f) && !StatesFigure(stated[b], f)) return;
    }
    int hits = 0;
    for (const std::string& s : stems) hits += sets[a].count(s) || sets[b].count(s);
    const double share = static_cast<double>(hits) / static_cast<double>(stems.size());
    // One page beats two at the same share.
    if (!best || share > best->share + 1e-9) {
      best = Support{pages[a].number, pages[b].number, share};
    }
  };
  for (size_t p = 0; p < pages.size(); ++p) consider(p, p);
  for (size_t p = 0; p + 1 < pages.size(); ++p) consider(p, p + 1);
  if (!best || best->share < min_share) return std::nullopt;
  return best;
}

}  // namespace

std::optional<Support> SupportingPage(std::string_view sentence, const std::vector<Page>& pages,
                                      double min_share) {
  std::vector<std::unordered_set<std::string>> sets;
  std::vector<std::vector<Fact>> stated;
  for (const Page& p : pages) {
    sets.push_back(StemSet(p.text));
    stated.push_back(StatedValues(p.text));
  }
  const std::vector<std::string> stems = ContentStems(sentence);
  if (stems.size() < 3) return std::nullopt;
  return BestSupport(stems, FiguresIn(StripPageMarkers(std::string(sentence))), pages, sets, stated,
                     min_share);
}

std::vector<std::string> UnstatedFigures(std::string_view text, const std::vector<Page>& pages) {
  std::vector<std::vector<Fact>> stated;
  for (const Page& p : pages) stated.push_back(StatedValues(p.text));
  const std::string stripped = StripPageMarkers(std::string(text));
  std::vector<std::string> out;
  for (const Fact& f : FiguresIn(stripped)) {
    if (std::none_of(stated.begin(), stated.end(),
                     [&](const std::vector<Fact>& s) { return StatesFigure(s, f); })) {
      out.push_back(stripped.substr(f.begin, f.end - f.begin));
    }
  }
  return out;
}

StatementCheck VerifyStatements(const std::string& body, const std::vector<Page>& pages,
                                bool keep_cited, std::vector<std::vector<std::string>>* said,
                                double min_share) {
  static const std::regex kCited(R"(\[pp?\. ?\d+)");
  std::vector<std::unordered_set<std::string>> sets;
  std::vector<std::vector<Fact>> stated;
  for (const Page& p : pages) {
    sets.push_back(StemSet(p.text));
    stated.push_back(StatedValues(p.text));
  }
  StatementCheck out;
  size_t at = 0;
  while (at <= body.size()) {
    size_t nl = body.find('\n', at);
    if (nl == std::string::npos) nl = body.size();
    const std::string raw = body.substr(at, nl - at);
    at = nl + 1;
    // "- " and other list marks stay in front of the line's first sentence.
    size_t text_at = raw.find_first_not_of(" -*•\t");
    if (text_at == std::string::npos) {
      if (!raw.empty() && Trim(raw).empty()) out.text += "\n";
      continue;
    }
    const std::string mark = raw.substr(0, text_at);
    std::string kept;
    for (std::string sentence : Sentences(raw.substr(text_at))) {
      if (keep_cited && std::regex_search(sentence, kCited)) {  // a checked figure line
        kept += (kept.empty() ? "" : " ") + sentence;
        continue;
      }
      sentence = StripPageMarkers(sentence);
      // Nothing but marks and spaces ("[page 3]" alone): no statement.
      if (std::none_of(sentence.begin(), sentence.end(),
                       [](char c) { return IsWordByte(static_cast<unsigned char>(c)); })) {
        continue;
      }
      if (pages.empty()) {
        kept += (kept.empty() ? "" : " ") + sentence;
        continue;
      }
      // A sentence of one or two content words must find all of them on
      // one page; one of none says nothing ("The report is above.").
      const std::vector<std::string> stems = ContentStems(sentence);
      if (said != nullptr && !stems.empty()) {
        bool again = false;
        for (const std::vector<std::string>& before : *said) {
          int common = 0;
          for (const std::string& s : stems) {
            common += std::find(before.begin(), before.end(), s) != before.end();
          }
          again |= common >= 0.8 * static_cast<double>(stems.size());
        }
        if (again) {
          ++out.repeated;
          continue;
        }
      }
      ++out.statements;
      const std::optional<Support> s = BestSupport(stems, FiguresIn(sentence), pages, sets, stated,
                                                   stems.size() < 3 ? 1.0 : min_share);
      if (!s) {
        out.unsupported.push_back(Trim(sentence));
        continue;
      }
      ++out.supported;
      if (said != nullptr) said->push_back(stems);
      std::string cite;
      if (s->first_page > 0) {
        cite = s->first_page == s->last_page ? " [p. " + std::to_string(s->first_page) + "]"
                                             : " [pp. " + std::to_string(s->first_page) + "-" +
                                                   std::to_string(s->last_page) + "]";
      }
      kept += (kept.empty() ? "" : " ") + sentence + cite;
    }
    if (!kept.empty()) out.text += mark + kept + "\n";
  }
  while (!out.text.empty() && out.text.back() == '\n') out.text.pop_back();
  return out;
}

namespace {

// Every word of four letters or more starts with a capital ("Maximum Number
// Of Columns", "Checklist For Choosing The Right Database Engine"); two
// words at least, no clause punctuation.
bool TitleCase(const std::string& t) {
  if (!std::isupper(static_cast<unsigned char>(t[0]))) return false;
  if (t.find_first_of(",;") != std::string::npos) return false;
  int words = 0;
  size_t i = 0;
  while (i < t.size()) {
    while (i < t.size() && t[i] == ' ') ++i;
    const size_t b = i;
    while (i < t.size() && t[i] != ' ') ++i;
    if (i == b) break;
    ++words;
    size_t letters = 0;
    for (size_t k = b; k < i; ++k) letters += std::isalpha(static_cast<unsigned char>(t[k])) != 0;
    if (letters >= 4 && !std::isupper(static_cast<unsigned char>(t[b]))) return false;
  }
  return words >= 2;
}

// The sections `is_heading` starts, given each one-line paragraph that
// looks like a heading (see DocumentOutline).
template <typename IsHeading>
std::vector<OutlineEntry> ScanOutline(const std::vector<Page>& pages, IsHeading is_heading) {
  std::vector<OutlineEntry> out;
  for (const Page& page : pages) {
    const std::string marker =
        page.number > 0 ? "[page " + std::to_string(page.number) + "]\n" : "";
    if (!out.empty()) out.back().text += marker;
    size_t at = 0;
    bool paragraph_start = true;
    while (at < page.text.size()) {
      size_t nl = page.text.find('\n', at);
      if (nl == std::string::npos) nl = page.text.size();
      const std::string line = page.text.substr(at, nl - at);
      at = nl + 1;
      const std::string t = Trim(line);
      const bool alone = paragraph_start && (at >= page.text.size() || page.text[at] == '\n');
      paragraph_start = t.empty();
      const bool heading_like = alone && t.size() > 2 && t.back() != '.' && t.back() != ':' &&
                                t.back() != ',' && std::count(t.begin(), t.end(), ' ') < 12;
      if (heading_like && is_heading(t)) out.push_back({t, page.number, page.number, marker});
      if (!out.empty()) {
        out.back().text += line + "\n";
        out.back().last_page = page.number;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<OutlineEntry> DocumentOutline(const std::vector<Page>& pages) {
  static const std::regex kHeading(R"(^(\d{1,2})\.?\s+[A-Z][^\n]{0,100}$)");
  static const std::regex kAppendix(R"(^Appendix ([A-Z])[.:]?\s+[A-Z][^\n]{0,100}$)");
  int next = 1;
  char next_appendix = 'A';
  std::vector<OutlineEntry> out = ScanOutline(pages, [&](const std::string& t) {
    std::smatch m;
    if (next_appendix == 'A' && std::regex_match(t, m, kHeading) &&
        std::atoi(m[1].str().c_str()) == next) {
      ++next;
      return true;
    }
    if (next > 2 && std::regex_match(t, m, kAppendix) && m[1].str()[0] == next_appendix) {
      ++next_appendix;
      return true;
    }
    return false;
  });
  if (out.size() >= 2) return out;
  // No numbered sections: headings in Title Case, three at least.
  out = ScanOutline(pages, [](const std::string& t) { return TitleCase(t); });
  if (out.size() < 3) out.clear();
  return out;
}

namespace {

// A key term's identity: lowercased, a plural "s" cut ("tokenizers" ->
// "tokenizer"; "class", "status" stay).
std::string TermKey(const std::string& word) {
  std::string k;
  for (char c : word) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k.size() > 5 && k.compare(k.size() - 3, 3, "ies") == 0) {
    k.replace(k.size() - 3, 3, "y");  // "queries" -> "query"
  } else if (k.size() > 4 && k.back() == 's' && k[k.size() - 2] != 's' && k[k.size() - 2] != 'u' &&
             k[k.size() - 2] != 'i') {
    k.pop_back();
  }
  return k;
}

struct TermCount {
  int count = 0;
  bool marked = false;               // written as a name or code somewhere
  size_t first = 0;                  // position of the first occurrence
  std::map<std::string, int> forms;  // as written -> times
  std::map<int, int> pages;          // page -> times
};

// A line of running text, not code, a table row or a heading: six words or
// more and a sentence end (".", "?", "!" or ":" at its end, or ". " inside).
bool Prose(const std::string& line) {
  const std::string t = Trim(line);
  if (t.empty() || std::count(t.begin(), t.end(), ' ') < 5) return false;
  const char last = t.back();
  return last == '.' || last == '?' || last == '!' || last == ':' ||
         t.find(". ") != std::string::npos;
}

// The candidate words of one section's running text (Prose lines),
// counted by TermKey.
std::map<std::string, TermCount> CountTerms(const OutlineEntry& e) {
  static const std::regex kMarker(R"(^\[page (\d+)\]$)");
  std::map<std::string, TermCount> out;
  // The heading's words, compared as stems of their keys.
  std::unordered_set<std::string> heading;
  for (const std::string& s : ContentStems(e.heading)) heading.insert(s);
  {
    std::string w;
    for (char c : e.heading + " ") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        w += c;
      } else if (!w.empty()) {
        heading.insert(Stem(TermKey(w)));
        w.clear();
      }
    }
  }
  int page = e.first_page;
  size_t pos = 0;
  const std::string& t = e.text;
  auto word_byte = [](unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; };
  size_t line_at = 0;
  while (line_at < t.size()) {
    size_t nl = t.find('\n', line_at);
    if (nl == std::string::npos) nl = t.size();
    const std::string line = t.substr(line_at, nl - line_at);
    line_at = nl + 1;
    std::smatch m;
    if (std::regex_match(line, m, kMarker)) {
      page = std::atoi(m[1].str().c_str());
      continue;
    }
    if (!Prose(line)) continue;
    bool after_stop = true;  // a line starts a sentence
    size_t at = 0;
    while (at < line.size()) {
      if (!word_byte(static_cast<unsigned char>(line[at]))) {
        ++at;
        continue;
      }
      size_t j = at;
      while (j < line.size()) {
        if (word_byte(static_cast<unsigned char>(line[j]))) {
          ++j;
        } else if (line[j] == '-' && j + 1 < line.size() &&
                   std::isalnum(static_cast<unsigned char>(line[j + 1])) && j > at) {
          ++j;  // "integrity-check", "UTF-16"
        } else {
          break;
        }
      }
      const std::string w = line.substr(at, j - at);
      at = j;
      ++pos;
      // After a sentence end, a capital says nothing about the word.
      const bool sentence_start = after_stop;
      after_stop =
          j < line.size() && (line[j] == '.' || line[j] == ':' || line[j] == '!' || line[j] == '?');
      const bool starts_with_letter = std::isalpha(static_cast<unsigned char>(w[0])) || w[0] < 0;
      const bool ascii_letter = std::any_of(
          w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
      const bool capitals = std::none_of(
          w.begin(), w.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
      // Bullets and other signs are bytes >= 0x80 too: a term holds a letter.
      if (!starts_with_letter || !ascii_letter || w.size() < (capitals ? 3u : 4u)) continue;
      const std::string key = TermKey(w);
      if (StopWords().count(key) || StopWords().count(w)) continue;
      if (heading.count(Stem(key))) continue;  // the heading already says it
      // A name or code: capitals inside ("FTS3", "OOM", "matchInfo"), digits,
      // '_' or '-' ("unicode61", "integrity-check"), or a capital in
      // mid-sentence ("Valgrind").
      const bool marked = std::any_of(w.begin() + 1, w.end(),
                                      [](char c) {
                                        return std::isupper(static_cast<unsigned char>(c)) ||
                                               std::isdigit(static_cast<unsigned char>(c)) ||
                                               c == '_' || c == '-';
                                      }) ||
                          (std::isupper(static_cast<unsigned char>(w[0])) && !sentence_start);
      // Adverbs and past participles ("simply", "obtained") are seldom what
      // a section is about.
      if (!marked && key.size() > 4 &&
          (key.compare(key.size() - 2, 2, "ly") == 0 ||
           key.compare(key.size() - 2, 2, "ed") == 0)) {
        continue;
      }
      TermCount& c = out[key];
      c.marked |= marked;
      if (c.count++ == 0) c.first = pos;
      ++c.forms[w];
      ++c.pages[page];
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<KeyTerm>> SectionKeyTerms(const std::vector<OutlineEntry>& outline, int k) {
  if (k <= 0) return std::vector<std::vector<KeyTerm>>(outline.size());
  std::vector<std::map<std::string, TermCount>> counts;
  std::map<std::string, int> df;
  for (const OutlineEntry& e : outline) {
    counts.push_back(CountTerms(e));
    for (const auto& [key, c] : counts.back()) ++df[key];
  }
  const double n = static_cast<double>(outline.size());
  std::vector<std::vector<KeyTerm>> out(outline.size());
  for (size_t i = 0; i < outline.size(); ++i) {
    struct Scored {
      double score;
      size_t first;
      const std::string* key;
    };
    std::vector<Scored> scored;
    for (const auto& [key, c] : counts[i]) {
      // A plain word must recur more than a name to be a term; a word in
      // more than half the sections says what the document is about.
      if (c.count < (c.marked ? 2 : 3) || df[key] > std::max(1.0, n / 2)) continue;
      // Sublinear in occurrences: a word on every line of a long section
      // does not outweigh one found in this section alone.
      const double score =
          (1 + std::log(static_cast<double>(c.count))) * std::log(n / df[key]) * (c.marked ? 2 : 1);
      if (score > 0) scored.push_back({score, c.first, &key});
    }
    std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
      return a.score != b.score ? a.score > b.score : a.first < b.first;
    });
    for (size_t j = 0; j < scored.size() && static_cast<int>(j) < k; ++j) {
      const TermCount& c = counts[i].at(*scored[j].key);
      auto most = [](const auto& m) {
        auto best = m.begin();
        for (auto it = m.begin(); it != m.end(); ++it) {
          if (it->second > best->second) best = it;
        }
        return best->first;
      };
      // Among forms written equally often, map order prefers capitals
      // ("MATCH" before "match"); among pages, the first.
      out[i].push_back({most(c.forms), most(c.pages), c.count});
    }
  }
  return out;
}

std::vector<std::string> SplitSentences(const std::string& line) { return Sentences(line); }

bool IsProse(const std::string& line) { return Prose(line); }

}  // namespace ellm::pipelines
