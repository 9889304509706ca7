#include "ellm/pipelines/facts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ellm::pipelines {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsAlnum(char c) { return IsDigit(c) || IsAlpha(c); }
char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

size_t SkipSpaces(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n')) ++i;
  return i;
}

// The word (letters only) at i, lowercased, and where it ends.
std::string WordAt(std::string_view t, size_t i, size_t* end) {
  size_t j = i;
  while (j < t.size() && IsAlpha(t[j])) ++j;
  *end = j;
  std::string w(t.substr(i, j - i));
  for (char& c : w) c = Lower(c);
  return w;
}

bool WordStart(std::string_view t, size_t i) { return i == 0 || !IsAlnum(t[i - 1]); }

int MonthOf(const std::string& w) {
  static const char* kFull[] = {"january",   "february", "march",    "april",
                                "may",       "june",     "july",     "august",
                                "september", "october",  "november", "december"};
  for (int m = 0; m < 12; ++m) {
    const std::string full = kFull[m];
    if (w == full) return m + 1;
    if (w.size() == 3 && full.compare(0, 3, w) == 0) return m + 1;
  }
  return w == "sept" ? 9 : 0;
}

int SmallNumberWord(const std::string& w) {
  static const char* kWords[] = {
      "zero",     "one",     "two",     "three",     "four",     "five",     "six",
      "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",   "thirteen",
      "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"};
  for (int n = 0; n <= 20; ++n) {
    if (w == kWords[n]) return n;
  }
  static const char* kTens[] = {"thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};
  for (int k = 0; k < 7; ++k) {
    if (w == kTens[k]) return 30 + 10 * k;
  }
  return -1;
}

// Digits with optional ",ddd" groups and a decimal part, at i (a word
// start). Returns the end, or npos.
size_t ParseFigure(std::string_view t, size_t i, double* value) {
  if (i >= t.size() || !IsDigit(t[i]) || !WordStart(t, i)) return std::string::npos;
  size_t j = i;
  while (j < t.size() && IsDigit(t[j])) ++j;
  std::string digits(t.substr(i, j - i));
  if (j - i <= 3) {
    // Thousands groups: exactly three digits after each comma.
    while (j + 3 < t.size() + 0 && t[j] == ',' && IsDigit(t[j + 1]) && IsDigit(t[j + 2]) &&
           IsDigit(t[j + 3]) && (j + 4 >= t.size() || !IsDigit(t[j + 4]))) {
      digits += t.substr(j + 1, 3);
      j += 4;
    }
  }
  if (j + 1 < t.size() && t[j] == '.' && IsDigit(t[j + 1])) {
    size_t k = j + 1;
    while (k < t.size() && IsDigit(t[k])) ++k;
    // "30.06.2026" is a date, not the figure 30.06.
    if (k < t.size() && t[k] == '.' && k + 1 < t.size() && IsDigit(t[k + 1]))
      return std::string::npos;
    digits += t.substr(j, k - j);
    j = k;
  }
  if (j < t.size() && IsAlpha(t[j])) {
    // Attached suffixes are handled by the caller (96m, 4.2bn, 30th).
  }
  *value = std::strtod(digits.c_str(), nullptr);
  return j;
}

struct Currency {
  const char* text;  // as written (case-sensitive for codes)
  const char* code;
  bool word;  // a word: case-insensitive, must end at a word boundary
};
constexpr Currency kCurrencies[] = {
    {"EUR", "EUR", false},
    {"USD", "USD", false},
    {"GBP", "GBP", false},
    {"CHF", "CHF", false},
    {"JPY", "JPY", false},
    {"CNY", "CNY", false},
    {"SEK", "SEK", false},
    {"NOK", "NOK", false},
    {"DKK", "DKK", false},
    {"CAD", "CAD", false},
    {"AUD", "AUD", false},
    {"INR", "INR", false},
    {"\xE2\x82\xAC", "EUR", false},  // €
    {"$", "USD", false},
    {"\xC2\xA3", "GBP", false},  // £
    {"\xC2\xA5", "JPY", false},  // ¥
    {"euros", "EUR", true},
    {"euro", "EUR", true},
    {"dollars", "USD", true},
    {"dollar", "USD", true},
    {"pounds", "GBP", true},
    {"pound", "GBP", true},
};

// A currency written at i; returns its end (npos if none).
size_t CurrencyAt(std::string_view t, size_t i, std::string* code) {
  for (const Currency& c : kCurrencies) {
    const std::string_view s = c.text;
    if (i + s.size() > t.size()) continue;
    bool eq = true;
    for (size_t k = 0; k < s.size() && eq; ++k) {
      eq = c.word ? Lower(t[i + k]) == s[k] : t[i + k] == s[k];
    }
    if (!eq) continue;
    const bool letters = IsAlpha(s[0]);
    if (letters && (!WordStart(t, i) || (i + s.size() < t.size() && IsAlpha(t[i + s.size()]))))
      continue;
    *code = c.code;
    return i + s.size();
  }
  return std::string::npos;
}

// Scale words after a figure. `attached`: written without a space (96m).
double ScaleOf(const std::string& w, bool attached) {
  if (w == "thousand" || (attached && w == "k")) return 1e3;
  if (w == "million" || w == "millions" || w == "mn" || w == "mio" || (attached && w == "m"))
    return 1e6;
  if (w == "billion" || w == "billions" || w == "bn" || (attached && w == "b")) return 1e9;
  if (w == "trillion" || w == "tn") return 1e12;
  return 0;
}

std::string UnitOf(const std::string& w) {
  for (const char* u : {"day", "week", "month", "year"}) {
    if (w == u || w == std::string(u) + "s") return u;
  }
  return "";
}

// A date at i: returns its end (npos if none) and sets *iso.
size_t DateAt(std::string_view t, size_t i, std::string* iso) {
  if (!WordStart(t, i)) return std::string::npos;
  auto digits = [&](size_t at, size_t n) {
    if (at + n > t.size()) return -1;
    int v = 0;
    for (size_t k = 0; k < n; ++k) {
      if (!IsDigit(t[at + k])) return -1;
      v = v * 10 + (t[at + k] - '0');
    }
    if (at + n < t.size() && IsDigit(t[at + n])) return -1;
    return v;
  };
  auto make = [&](int y, int m, int d) {
    static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 0 || y < 1000) return false;
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > kDays[m - 1] + (m == 2 && leap ? 1 : 0)) return false;
    char buf[48];
    if (d == 0) {
      std::snprintf(buf, sizeof(buf), "%04d-%02d", y, m);
    } else {
      std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d", y, m, d);
    }
    *iso = buf;
    return true;
  };
  if (IsDigit(t[i])) {
    // 2026-06-30
    if (int y = digits(i, 4); y > 0 && i + 10 <= t.size() && t[i + 4] == '-' && t[i + 7] == '-') {
      if (make(y, digits(i + 5, 2), digits(i + 8, 2))) return i + 10;
    }
    size_t j = i;
    while (j < t.size() && IsDigit(t[j])) ++j;
    if (j - i > 2) return std::string::npos;
    const int a = digits(i, j - i);
    // 30/06/2026, 30.06.2026 (day first unless the day would be > 12... the
    // month cannot exceed 12, so 06/30/2026 reads month first).
    if (j < t.size() && (t[j] == '/' || t[j] == '.')) {
      const char sep = t[j];
      size_t k = j + 1;
      size_t l = k;
      while (l < t.size() && IsDigit(t[l])) ++l;
      if (l - k >= 1 && l - k <= 2 && l < t.size() && t[l] == sep) {
        const int b = digits(k, l - k);
        if (int y = digits(l + 1, 4); y > 0) {
          if (b <= 12 ? make(y, b, a) : make(y, a, b)) return l + 5;
        }
      }
      return std::string::npos;
    }
    // 30 June 2026, 30th of June, 2026
    size_t k = j;
    if (k + 2 <= t.size()) {
      std::string suf{Lower(t[k]), k + 1 < t.size() ? Lower(t[k + 1]) : ' '};
      if (suf == "st" || suf == "nd" || suf == "rd" || suf == "th") k += 2;
    }
    k = SkipSpaces(t, k);
    size_t e;
    std::string w = WordAt(t, k, &e);
    if (w == "of") {
      k = SkipSpaces(t, e);
      w = WordAt(t, k, &e);
    }
    const int m = MonthOf(w);
    if (m == 0) return std::string::npos;
    if (e < t.size() && t[e] == '.') ++e;
    size_t y_at = e < t.size() && t[e] == ',' ? e + 1 : e;
    y_at = SkipSpaces(t, y_at);
    if (int y = digits(y_at, 4); y > 0 && a >= 1 && make(y, m, a)) return y_at + 4;
    return std::string::npos;
  }
  // June 30, 2026 / June 2026
  size_t e;
  const int m = MonthOf(WordAt(t, i, &e));
  if (m == 0) return std::string::npos;
  if (e < t.size() && t[e] == '.') ++e;
  size_t k = SkipSpaces(t, e);
  if (int y = digits(k, 4); y > 0) return make(y, m, 0) ? k + 4 : std::string::npos;
  size_t j = k;
  while (j < t.size() && IsDigit(t[j])) ++j;
  if (j == k || j - k > 2) return std::string::npos;
  const int d = digits(k, j - k);
  if (j + 2 <= t.size()) {
    std::string suf{Lower(t[j]), j + 1 < t.size() ? Lower(t[j + 1]) : ' '};
    if (suf == "st" || suf == "nd" || suf == "rd" || suf == "th") j += 2;
  }
  if (j < t.size() && t[j] == ',') ++j;
  j = SkipSpaces(t, j);
  if (int y = digits(j, 4); y > 0 && d >= 1 && make(y, m, d)) return j + 4;
  return std::string::npos;
}

// A figure, percent, duration or amount starting at i (a currency, digit
// or number word); returns its end or npos. `spelled`: a number word.
size_t QuantityAt(std::string_view t, size_t i, Fact* f, bool* spelled) {
  *spelled = false;
  std::string currency;
  size_t j = i;
  if (size_t c = CurrencyAt(t, i, &currency); c != std::string::npos) {
    j = SkipSpaces(t, c);
    if (j >= t.size() || !IsDigit(t[j])) return std::string::npos;
  }
  double v = 0;
  size_t e = ParseFigure(t, j, &v);
  if (e == std::string::npos) {
    if (!currency.empty() || !WordStart(t, j) || !IsAlpha(t[j])) return std::string::npos;
    size_t we;
    const int n = SmallNumberWord(WordAt(t, j, &we));
    if (n < 0 || (we < t.size() && IsAlnum(t[we]))) return std::string::npos;
    *spelled = true;
    v = n;
    e = we;
    // "ninety (90) days": the digits in brackets restate the word.
    size_t k = SkipSpaces(t, e);
    double restated = 0;
    if (k < t.size() && t[k] == '(') {
      size_t r = ParseFigure(t, k + 1, &restated);
      if (r != std::string::npos && r < t.size() && t[r] == ')' && restated == v) {
        e = r + 1;
        *spelled = false;
      }
    }
  }
  f->begin = i;
  f->value = v;
  // Attached scale (96m, 4.2bn) or suffix.
  size_t we;
  std::string attached = WordAt(t, e, &we);
  if (!attached.empty()) {
    double s = ScaleOf(attached, true);
    if (s == 0) return *spelled ? std::string::npos : (f->kind = FactKind::kNumber, f->end = e, e);
    f->value *= s;
    e = we;
    f->kind = FactKind::kAmount;
  }
  size_t k = SkipSpaces(t, e);
  if (k < t.size() && t[k] == '%') {
    f->kind = FactKind::kPercent;
    f->end = k + 1;
    return f->end;
  }
  std::string w = WordAt(t, k, &we);
  if (w == "percent" || (w == "per" && WordAt(t, SkipSpaces(t, we), &we) == "cent")) {
    f->kind = FactKind::kPercent;
    f->end = we;
    return f->end;
  }
  if (attached.empty()) {
    if (double s = ScaleOf(w, false); s > 0) {
      f->value *= s;
      f->kind = FactKind::kAmount;
      e = we;
      k = SkipSpaces(t, e);
      w = WordAt(t, k, &we);
    } else if (currency.empty()) {
      std::string unit = UnitOf(w == "business" || w == "calendar" || w == "working"
                                    ? WordAt(t, SkipSpaces(t, we), &we)
                                    : w);
      if (!unit.empty()) {
        f->kind = FactKind::kDuration;
        f->unit = unit;
        f->end = we;
        return f->end;
      }
    }
  }
  if (currency.empty()) {
    std::string after;
    size_t c = CurrencyAt(t, k, &after);
    if (c != std::string::npos && IsAlpha(t[k])) {
      currency = after;
      e = c;
    }
  }
  if (*spelled && currency.empty() && f->kind != FactKind::kAmount) return std::string::npos;
  if (!currency.empty()) f->kind = FactKind::kAmount;
  if (f->kind != FactKind::kAmount) f->kind = FactKind::kNumber;
  f->currency = currency;
  f->end = e;
  return e;
}

std::string FormatFigure(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.10g", v);
  }
  return buf;
}

bool SameFigure(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

// Lowercased words of `t` joined by single spaces, with each output byte's
// source offset (origin.size() == result.size() + 1; the last is the end).
// U+2010..U+201F (dashes, curly quotes) at t[i]: punctuation like their
// ASCII forms, so that "days’" (as OCR or a typesetter writes it) and
// "days'" are the same words.
bool TypographicPunctuation(std::string_view t, size_t i) {
  return i + 2 < t.size() && static_cast<unsigned char>(t[i]) == 0xE2 &&
         static_cast<unsigned char>(t[i + 1]) == 0x80 &&
         static_cast<unsigned char>(t[i + 2]) >= 0x90 &&
         static_cast<unsigned char>(t[i + 2]) <= 0x9F;
}

std::string Words(std::string_view t, std::vector<size_t>* origin) {
  std::string out;
  bool gap = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (TypographicPunctuation(t, i)) {
      gap = !out.empty();
      i += 2;
      continue;
    }
    const bool keep = IsAlnum(t[i]) || c >= 0x80;
    if (!keep) {
      gap = !out.empty();
      continue;
    }
    if (gap) {
      out += ' ';
      if (origin) origin->push_back(i);
      gap = false;
    }
    out += Lower(t[i]);
    if (origin) origin->push_back(i);
  }
  if (origin) origin->push_back(t.size());
  return out;
}

// The paragraph (between blank lines) around [begin, end) of `t`.
std::string_view Paragraph(std::string_view t, size_t begin, size_t end) {
  size_t a = t.rfind("\n\n", begin);
  a = a == std::string_view::npos ? 0 : a + 2;
  size_t b = t.find("\n\n", end);
  b = b == std::string_view::npos ? t.size() : b;
  return t.substr(a, b - a);
}

bool HasKeyword(std::string_view paragraph, const std::vector<std::string>& keywords) {
  const std::string words = " " + Words(paragraph, nullptr) + " ";
  for (const std::string& k : keywords) {
    const std::string w = Words(k, nullptr);
    if (!w.empty() && words.find(" " + w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

StatusOr<FactKind> ParseFactKind(std::string_view name) {
  for (FactKind k : {FactKind::kText, FactKind::kAmount, FactKind::kNumber, FactKind::kPercent,
                     FactKind::kDate, FactKind::kDuration}) {
    if (name == FactKindName(k)) return k;
  }
  return InvalidArgumentError("unknown field type '" + std::string(name) +
                              "' (text, amount, number, percent, date, duration)");
}

const char* FactKindName(FactKind kind) {
  switch (kind) {
    case FactKind::kText:
      return "text";
    case FactKind::kAmount:
      return "amount";
    case FactKind::kNumber:
      return "number";
    case FactKind::kPercent:
      return "percent";
    case FactKind::kDate:
      return "date";
    case FactKind::kDuration:
      return "duration";
  }
  return "?";
}

std::string Fact::Normalized() const {
  switch (kind) {
    case FactKind::kText:
      return "";
    case FactKind::kAmount:
      return currency.empty() ? FormatFigure(value) : currency + " " + FormatFigure(value);
    case FactKind::kNumber:
      return FormatFigure(value);
    case FactKind::kPercent:
      return FormatFigure(value) + "%";
    case FactKind::kDate:
      return date;
    case FactKind::kDuration:
      return FormatFigure(value) + " " + unit + (value == 1 ? "" : "s");
  }
  return "";
}

std::vector<Fact> FindFacts(std::string_view text) {
  std::vector<Fact> out;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (!WordStart(text, i) && c < 0x80) {
      ++i;
      continue;
    }
    std::string iso;
    if (size_t e = DateAt(text, i, &iso); e != std::string::npos) {
      Fact f;
      f.kind = FactKind::kDate;
      f.date = iso;
      f.begin = i;
      f.end = e;
      out.push_back(f);
      i = e;
      continue;
    }
    Fact f;
    bool spelled = false;
    if (size_t e = QuantityAt(text, i, &f, &spelled); e != std::string::npos) {
      out.push_back(f);
      i = e;
      continue;
    }
    // Skip the rest of this word (or one byte of a symbol / UTF-8 sequence).
    size_t j = i + 1;
    while (j < text.size() && IsAlnum(text[j]) && IsAlnum(text[i])) ++j;
    i = j;
  }
  return out;
}

std::vector<Fact> FiguresIn(std::string_view text) {
  std::vector<Fact> out;
  for (const Fact& f : FindFacts(text)) {
    if (f.kind == FactKind::kText) continue;
    // A number word alone never reaches here (QuantityAt refuses it).
    out.push_back(f);
  }
  return out;
}

std::vector<Fact> StatedValues(std::string_view text) {
  std::vector<Fact> out = FindFacts(text);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!WordStart(text, i) || !IsAlpha(text[i])) continue;
    size_t e;
    const int n = SmallNumberWord(WordAt(text, i, &e));
    if (n >= 0 && (e >= text.size() || !IsAlnum(text[e]))) {
      Fact f;
      f.kind = FactKind::kNumber;
      f.value = n;
      f.begin = i;
      f.end = e;
      out.push_back(f);
    }
    while (i + 1 < text.size() && IsAlnum(text[i + 1])) ++i;
  }
  return out;
}

bool StatesFigure(const std::vector<Fact>& stated, const Fact& figure) {
  // A year: a whole number of four digits that a date could hold
  // (DateAt's years), without a currency.
  std::string within;
  if (figure.kind == FactKind::kNumber && figure.currency.empty() && figure.value >= 1000 &&
      figure.value <= 9999 && figure.value == std::floor(figure.value)) {
    within = FormatFigure(figure.value) + "-";
  } else if (figure.kind == FactKind::kDate && figure.date.size() == 7) {
    within = figure.date + "-";  // "YYYY-MM-": a day of that month
  }
  return std::any_of(stated.begin(), stated.end(), [&](const Fact& s) {
    return SameValue(figure, s) ||
           (!within.empty() && s.kind == FactKind::kDate && s.date.rfind(within, 0) == 0);
  });
}

std::optional<Fact> FirstFactOf(FactKind kind, std::string_view text) {
  if (kind == FactKind::kText) {
    size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && (std::isspace(static_cast<unsigned char>(text[e - 1])) ||
                     std::string_view(".,;:").find(text[e - 1]) != std::string_view::npos)) {
      --e;
    }
    if (b == e) return std::nullopt;
    Fact f;
    f.begin = b;
    f.end = e;
    return f;
  }
  for (const Fact& f : FindFacts(text)) {
    const bool figure = f.kind == FactKind::kAmount || f.kind == FactKind::kNumber;
    if (f.kind == kind || (figure && (kind == FactKind::kAmount || kind == FactKind::kNumber))) {
      return f;
    }
  }
  // A spelled-out count ("twelve") answers a number field.
  if (kind == FactKind::kNumber) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (!WordStart(text, i) || !IsAlpha(text[i])) continue;
      size_t e;
      const int n = SmallNumberWord(WordAt(text, i, &e));
      if (n >= 0) {
        Fact f;
        f.kind = FactKind::kNumber;
        f.value = n;
        f.begin = i;
        f.end = e;
        return f;
      }
    }
  }
  return std::nullopt;
}

bool SameValue(const Fact& a, const Fact& b) {
  const bool fa = a.kind == FactKind::kAmount || a.kind == FactKind::kNumber;
  const bool fb = b.kind == FactKind::kAmount || b.kind == FactKind::kNumber;
  if (fa && fb) {
    if (!a.currency.empty() && !b.currency.empty() && a.currency != b.currency) return false;
    return SameFigure(a.value, b.value);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case FactKind::kPercent:
      return SameFigure(a.value, b.value);
    case FactKind::kDate:
      return a.date == b.date;
    case FactKind::kDuration: {
      auto base = [](const Fact& f, bool* months) {
        *months = f.unit == "month" || f.unit == "year";
        if (f.unit == "week") return f.value * 7;
        if (f.unit == "year") return f.value * 12;
        return f.value;
      };
      bool ma, mb;
      const double va = base(a, &ma), vb = base(b, &mb);
      return ma == mb && SameFigure(va, vb);
    }
    default:
      return false;
  }
}

std::string NormalizeWords(std::string_view text) { return Words(text, nullptr); }

std::vector<Page> SplitPages(std::string_view rendered) {
  std::vector<Page> pages;
  size_t at = 0;
  while (at < rendered.size()) {
    size_t nl = rendered.find('\n', at);
    if (nl == std::string_view::npos) nl = rendered.size();
    std::string_view line = rendered.substr(at, nl - at);
    int number = 0;
    if (line.size() > 7 && line.substr(0, 6) == "[page " && line.back() == ']') {
      const std::string digits(line.substr(6, line.size() - 7));
      if (!digits.empty() && std::all_of(digits.begin(), digits.end(), IsDigit)) {
        number = std::atoi(digits.c_str());
      }
    }
    if (number > 0) {
      pages.push_back({number, ""});
    } else {
      if (pages.empty()) pages.push_back({0, ""});
      pages.back().text += std::string(line) + (nl < rendered.size() ? "\n" : "");
    }
    at = nl + 1;
  }
  return pages;
}

std::optional<SourceSpan> Locate(const Fact& value, std::string_view text,
                                 const std::vector<Page>& pages,
                                 const std::vector<std::string>& keywords, int hint) {
  std::vector<SourceSpan> matches;
  if (value.kind == FactKind::kText) {
    const std::string needle = Words(text, nullptr);
    if (needle.empty()) return std::nullopt;
    for (const Page& p : pages) {
      std::vector<size_t> origin;
      const std::string hay = Words(p.text, &origin);
      for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
        // Whole words only.
        if ((at > 0 && hay[at - 1] != ' ') ||
            (at + needle.size() < hay.size() && hay[at + needle.size()] != ' ')) {
          continue;
        }
        const size_t b = origin[at], e = origin[at + needle.size() - 1] + 1;
        matches.push_back({p.number, b, e, p.text.substr(b, e - b)});
      }
    }
  } else {
    for (const Page& p : pages) {
      for (const Fact& f : FindFacts(p.text)) {
        if (SameValue(value, f)) {
          matches.push_back({p.number, f.begin, f.end, p.text.substr(f.begin, f.end - f.begin)});
        }
      }
    }
  }
  if (matches.empty()) return std::nullopt;
  auto page_text = [&](int number) -> std::string_view {
    for (const Page& p : pages) {
      if (p.number == number) return p.text;
    }
    return {};
  };
  auto rank = [&](const SourceSpan& s) {
    const bool key =
        !keywords.empty() && HasKeyword(Paragraph(page_text(s.page), s.begin, s.end), keywords);
    const bool on_hint = hint > 0 && s.page == hint;
    return (key && on_hint) ? 0 : key ? 1 : on_hint ? 2 : 3;
  };
  return *std::min_element(
      matches.begin(), matches.end(),
      [&](const SourceSpan& a, const SourceSpan& b) { return rank(a) < rank(b); });
}

}  // namespace ellm::pipelines
