#include "ellm/pipelines/statements.h"

#include "ellm/pipelines/provenance.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
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

// A line's sentences: split after ". ", "! ", "? " (a decimal point has no
// space after it, an abbreviation is short); each keeps its punctuation.
std::vector<std::string> Sentences(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const char c = line[i];
    if ((c == '.' || c == '!' || c == '?') && line[i + 1] == ' ') {
      // "p. 4", "e.g. ", "No. 7": a word of one or two letters before a
      // period is an abbreviation.
      size_t w = i;
      while (w > start && std::isalpha(static_cast<unsigned char>(line[w - 1]))) --w;
      if (c == '.' && i - w >= 1 && i - w <= 2) continue;
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

std::optional<Support> BestSupport(const std::vector<std::string>& stems,
                                   const std::vector<Page>& pages,
                                   const std::vector<std::unordered_set<std::string>>& sets,
                                   double min_share) {
  if (stems.empty()) return std::nullopt;
  std::optional<Support> best;
  auto consider = [&](size_t a, size_t b) {
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
  for (const Page& p : pages) sets.push_back(StemSet(p.text));
  const std::vector<std::string> stems = ContentStems(sentence);
  if (stems.size() < 3) return std::nullopt;
  return BestSupport(stems, pages, sets, min_share);
}

StatementCheck VerifyStatements(const std::string& body, const std::vector<Page>& pages,
                                bool keep_cited, std::vector<std::vector<std::string>>* said,
                                double min_share) {
  static const std::regex kCited(R"(\[pp?\. ?\d+)");
  std::vector<std::unordered_set<std::string>> sets;
  for (const Page& p : pages) sets.push_back(StemSet(p.text));
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
      const std::optional<Support> s =
          BestSupport(stems, pages, sets, stems.size() < 3 ? 1.0 : min_share);
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

std::vector<OutlineEntry> DocumentOutline(const std::vector<Page>& pages) {
  static const std::regex kHeading(R"(^(\d{1,2})\.?\s+[A-Z][^\n]{0,100}$)");
  std::vector<OutlineEntry> out;
  int next = 1;
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
      std::smatch m;
      if (alone && std::regex_match(t, m, kHeading) && std::atoi(m[1].str().c_str()) == next &&
          t.back() != '.' && t.back() != ':' && t.back() != ',' &&
          std::count(t.begin(), t.end(), ' ') < 12) {
        out.push_back({t, page.number, page.number, marker});
        ++next;
      }
      if (!out.empty()) {
        out.back().text += line + "\n";
        out.back().last_page = page.number;
      }
    }
  }
  if (out.size() < 2) out.clear();
  return out;
}

}  // namespace ellm::pipelines
