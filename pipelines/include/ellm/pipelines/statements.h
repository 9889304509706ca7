// Statements traced to pages: a summary's prose checked against the
// document word by word, so each sentence a reader sees names the page it
// rests on, and a sentence no page supports is taken out. Pure functions
// over text (no model). Lexical, not semantic: a sentence is supported when
// one page (or two adjacent pages) holds most of its content words, after
// light stemming ("tested" = "testing" = "tests"), and that page states
// every figure, year, date, amount and percentage of the sentence, compared
// by value (facts.h StatesFigure: "1,000" = "1000", "2019-12-31" = "31
// December 2019"). It catches statements about things the document never
// mentions and figures it never gives ("the year ended 31 December 2019"
// about a report on 2025); it cannot catch a wrong relation between words
// and figures the page does hold.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/ingest/document.h"

#include "ellm/pipelines/facts.h"

namespace ellm::pipelines {

// The content words of `text` as stems: lowercased runs of letters and
// digits, common English and summary words ("report", "describes") left
// out, suffixes -ing/-ed/-es/-s/-ly/-ation cut, at most 6 bytes kept.
std::vector<std::string> ContentStems(std::string_view text);

// A line's sentences: split after ". ", "! ", "? " (not after an
// abbreviation of one or two letters: "p. 4", "e.g. "); each keeps its
// punctuation.
std::vector<std::string> SplitSentences(const std::string& line);

// A line of running text, not code, a table row or a heading: six words or
// more and a sentence end (".", "?", "!" or ":" at its end, or ". " inside).
bool IsProse(const std::string& line);

inline constexpr double kMinStatementSupport = 0.6;

struct Support {
  int first_page = 0;  // the page (or first of two adjacent pages)
  int last_page = 0;
  double share = 0;  // of the sentence's distinct stems found there
};
// The best-supported page for `sentence` among `pages` when its share
// reaches `min_share`; nullopt otherwise, and for a sentence with fewer
// than 3 content stems (too little to check, also too little to drop).
// Only a page (or two adjacent pages) stating every figure of the sentence
// (UnstatedFigures) can support it.
std::optional<Support> SupportingPage(std::string_view sentence, const std::vector<Page>& pages,
                                      double min_share = kMinStatementSupport);

// The figures of `text` (facts.h FiguresIn; page markers left out) that
// no page of `pages` states (facts.h StatesFigure), as `text` writes them.
std::vector<std::string> UnstatedFigures(std::string_view text, const std::vector<Page>& pages);

// A section's prose checked sentence by sentence: supported sentences get
// " [p. N]" (or "[pp. N-M]"), unsupported ones are removed. A sentence of
// one or two content words is supported only when one page holds them all;
// one of none ("The report is above.") is not; one whose figures the pages
// holding its words do not state is not either. Page markers the model wrote are dropped
// first, except with `keep_cited`: then a sentence citing a page stays as
// it is (lines VerifyFigureLines already checked and cited).
struct StatementCheck {
  std::string text;
  std::vector<std::string> unsupported;  // removed sentences
  int statements = 0;                    // sentences checked
  int supported = 0;
  int repeated = 0;  // dropped as saying again what `said` holds
};
//
// `said` (optional) holds the content stems of statements kept before,
// e.g. in earlier sections: a sentence whose stems are 80% among one of
// them says it again and is dropped (counted in `repeated`); each kept
// sentence's stems are added.
StatementCheck VerifyStatements(const std::string& body, const std::vector<Page>& pages,
                                bool keep_cited = false,
                                std::vector<std::vector<std::string>>* said = nullptr,
                                double min_share = kMinStatementSupport);

// A top-level numbered section of a document ("2. Test Harnesses"): its
// heading line, the pages it spans and its text with its "[page N]"
// markers (the heading line included).
struct OutlineEntry {
  std::string heading;
  int first_page = 0;
  int last_page = 0;
  std::string text;
};
// The document's top-level sections: paragraphs of one line that start with
// the next number in sequence (1, 2, 3, ...; "1." or "1"), then a capital
// letter, at most 12 words, no sentence end. Sub-sections ("2.1.") stay
// inside theirs. After them, appendices lettered in sequence ("Appendix A:
// Title", "Appendix B. Title", "Appendix C Title"). Fewer than two numbered
// sections found: the one-line paragraphs in Title Case (every word of four
// letters or more capitalised, two words at least, no ',' or ';'), when there
// are three or more; the document's title line is then the first. Else
// empty (no outline is better than a list taken for one).
std::vector<OutlineEntry> DocumentOutline(const std::vector<Page>& pages);

// The same from the heading tree the file gives itself (a PDF's bookmarks,
// a Word or OpenDocument file's heading styles: ingest::Document::headings)
// when it has one: its top level, or the level below a single root (a title
// over every chapter), when that level has two entries or more; each
// section's text from its heading's line (found on the heading's page, else
// the page's start) to the next section's. Else DocumentOutline(pages). At
// most kMaxOutlineSections sections (the rest join the last).
inline constexpr size_t kMaxOutlineSections = 40;
std::vector<OutlineEntry> DocumentOutline(const std::vector<Page>& pages,
                                          const std::vector<ingest::Heading>& headings);

// A term that marks one section out from the others, and the page of the
// section where it occurs most (the first of them on a tie).
struct KeyTerm {
  std::string term;  // as the section writes it most often
  int page = 0;
  int count = 0;  // occurrences in the section
};
// Up to `k` key terms per outline entry, by tf-idf over the entries: words
// (letters, digits, '_', inner '-': "unicode61", "integrity-check",
// "UTF-16") holding an ASCII letter, of at least 4 bytes (3 when written in
// capitals), not common function words, adverbs in -ly, past participles in
// -ed, or words of the section's own heading. A name or code (capitals after
// the first letter, digits, '_', '-', or a capital in mid-sentence) must
// occur twice in the section, another word three times. Score: (1 + ln
// occurrences) x ln(sections / sections holding the word), doubled for a
// name or code; a word in every section scores 0 and is never chosen.
// Plurals count with their singular ("tokenizers" = "tokenizer").
std::vector<std::vector<KeyTerm>> SectionKeyTerms(const std::vector<OutlineEntry>& outline, int k);

}  // namespace ellm::pipelines
