// The values a clause states, numbers spelled in words included
// (contracts.h ClauseValues).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
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
