// Page lines -> page text: lines joined into paragraphs, hyphenation at
// line ends repaired, table rows kept one per line. Pure functions; the
// evidence object is read-only while assembling (thread-safe to share).
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "text/text_line.h"

namespace ellm::ingest::text {

// The words a document spells out (lower-cased, surrounding punctuation
// stripped), used to decide whether a hyphen at a line end is part of the
// word ("state-of-the-\nart") or only a break ("reve-\nnue").
class HyphenEvidence {
 public:
  // Records every word of `line` except a last word ending in a hyphen.
  void AddLine(std::string_view line);
  bool Has(std::string_view lower_word) const { return words_.count(std::string(lower_word)) > 0; }

 private:
  std::unordered_set<std::string> words_;
};

// Joins `left` (a line ending in '-' or a soft hyphen) and `right` (the
// next line) into one string. The hyphen is removed and the halves joined
// ("reve-" + "nue" -> "revenue") unless the hyphen belongs to the word: the
// right half starts with a capital or digit ("COVID-19", "2019-2023"), the
// left word already has a hyphen ("state-of-the-"), the document spells the
// hyphenated form elsewhere and not the joined one, or the left half is a
// compounding prefix such as "self", "well" or "non". A soft hyphen always
// joins.
std::string JoinHyphenated(std::string_view left, std::string_view right,
                           const HyphenEvidence& evidence);

// Joins one paragraph's next line onto `paragraph`: hyphen repair, no space
// between CJK characters, otherwise one space.
void AppendLine(std::string_view line, const HyphenEvidence& evidence, std::string* paragraph);

// The page's text: paragraphs separated by a blank line, each table as its
// rows one per line with a blank line before and after. A kBlock break
// continues the paragraph when the sentence visibly goes on (no terminal
// punctuation before, a lower-case letter after). Soft hyphens are removed.
std::string AssemblePage(const PageLines& lines, const HyphenEvidence& evidence);

}  // namespace ellm::ingest::text
