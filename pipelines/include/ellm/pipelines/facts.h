// Facts in a document's text: the figures, percentages and dates a model
// writes, recognised in any common spelling and found again on the pages
// the model read. What makes a summary or a comparison checkable: a value is
// trusted only where it is located in the source, with its page and span.
//
// Recognised spellings (English conventions: "," groups thousands, "."
// marks decimals):
//   amounts   EUR 4.2 billion = 4,200 million euros = €4.2bn = 4200000000 EUR;
//             currencies by ISO code (EUR, USD, GBP, CHF, JPY, ...), symbol
//             (€ $ £ ¥) or word (euro(s), dollar(s), pound(s) sterling);
//             scales thousand/k, million/m/mn/mio, billion/bn, trillion/tn
//   numbers   14, 1,100, 0.84, 2.1; one..twenty as words
//   percents  50%, 50 %, 50 percent, 50 per cent
//   dates     30 June 2026, 30th June 2026, June 30, 2026, 2026-06-30,
//             30/06/2026 (day first unless that is impossible), 30.06.2026;
//             month precision: June 2026
//   durations 30 days, ninety (90) days, 3 months, 2 years, 6 weeks
// A quantity inside a date or a duration is part of it, not a figure of its
// own ("30 June 2026" holds no figure 30).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::pipelines {

enum class FactKind {
  kText,      // compared as words: case, spacing and punctuation ignored
  kAmount,    // a figure, with a currency when one is given
  kNumber,    // a plain figure
  kPercent,   // a percentage
  kDate,      // a calendar day, or a month
  kDuration,  // a count of days, weeks, months or years
};
// "text", "amount", "number", "percent", "date", "duration".
StatusOr<FactKind> ParseFactKind(std::string_view name);
const char* FactKindName(FactKind kind);

// One value recognised in a text. `begin`/`end` are byte offsets into the
// text it was found in.
struct Fact {
  FactKind kind = FactKind::kText;
  double value = 0;      // amount/number/percent: the figure (4.2e9 for "EUR 4.2 billion");
                         // duration: the count of `unit`
  std::string currency;  // amount: ISO code, or "" when none is written
  std::string unit;      // duration: "day", "week", "month" or "year"
  std::string date;      // date: "YYYY-MM-DD", or "YYYY-MM" for a month
  size_t begin = 0, end = 0;

  // The canonical spelling compared across documents: "EUR 96000000",
  // "50%", "14", "2026-06-30", "30 days".
  std::string Normalized() const;
};

// Every date, duration, percent and figure in `text`, in order of position,
// not overlapping. Figures are kAmount when a currency or scale word is
// attached ("EUR 96 million", "4.2 billion"), kNumber otherwise.
std::vector<Fact> FindFacts(std::string_view text);

// The first fact of `kind` in `text` (kNumber also takes an amount without
// currency; kAmount also takes a scaled number). For kText: `text` trimmed
// of spaces and trailing punctuation, nullopt when that is empty.
std::optional<Fact> FirstFactOf(FactKind kind, std::string_view text);

// Whether two facts state the same value: figures (number and amount alike)
// equal within a relative 1e-9, with equal currencies when both name one;
// percents equal; dates equal; durations equal after exact conversions only
// (1 week = 7 days, 1 year = 12 months: "90 days" is not "3 months").
bool SameValue(const Fact& a, const Fact& b);

// The lowercased words (letters and digits runs) of `text`, joined by one
// space: how text values compare ("England and Wales." = "england and wales").
std::string NormalizeWords(std::string_view text);

// A document as the model read it, split at its "[page N]" marker lines
// (ingest::RenderForModel). A text without markers is one page, number 0.
struct Page {
  int number = 0;
  std::string text;
};
std::vector<Page> SplitPages(std::string_view rendered);

// Where a value stands in the source.
struct SourceSpan {
  int page = 0;      // 0: a document without pages
  size_t begin = 0;  // byte offsets into that page's text
  size_t end = 0;
  std::string text;  // the matching source text
};

// Finds `value` (a fact from the model's answer; for kText, `text` holds
// its words) in `pages`. Figures, percents, dates and durations match by
// value (SameValue), text by its words (case, spacing and punctuation
// ignored). Of several matches the first wins among, in this order: those
// whose paragraph holds one of `keywords` (case ignored) on page `hint`,
// those with a keyword anywhere, those on page `hint`, all. nullopt: the
// value is nowhere in the document.
std::optional<SourceSpan> Locate(const Fact& value, std::string_view text,
                                 const std::vector<Page>& pages,
                                 const std::vector<std::string>& keywords = {}, int hint = 0);

// The facts of `text` that are figures a reader would check: amounts,
// numbers, percents, dates (durations included). Small counts written as
// words are left out: "two manufacturers" is not a key figure.
std::vector<Fact> FiguresIn(std::string_view text);

// The values a source text states, for StatesFigure: FindFacts(text) and
// the counts it spells as words ("twelve" = 12, "ninety" = 90), which
// FindFacts leaves out.
std::vector<Fact> StatedValues(std::string_view text);

// Whether `stated` (StatedValues of a source) states `figure` (one of
// FiguresIn of a model's text): a value the same (SameValue), or, for a
// year written alone ("2019") or a month ("December 2019"), a date inside
// it ("31 December 2019"). A figure more precise than the source ("31
// December 2019" where the source says "2019") is not stated.
bool StatesFigure(const std::vector<Fact>& stated, const Fact& figure);

}  // namespace ellm::pipelines
