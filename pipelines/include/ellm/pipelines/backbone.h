// The extractive backbone of a summary: the document's own sentences that
// carry each part of it (what it is for, its figures, its risks, its
// conclusions), chosen without a model, each with its page. A summary
// section whose model-written text the checks took out is filled from
// here, so it is never empty when the document has something for it, and
// the result says which sentences are the document's own words.
//
// How a sentence is chosen (pure functions over the pages' text):
// - candidates are sentences of running text (statements.h IsProse lines):
//   6 to 60 words, not code, table rows or headings;
// - centrality: the sentence's content stems weighed by how often the
//   document uses them and how few sentences hold each (tf x idf^2), over
//   its length's square root, scaled to the best candidate's;
// - position: early for what the document is for and for its figures,
//   late for its conclusions;
// - cues of the part asked for ("this manual describes", "risk", "must
//   not", "in conclusion", ...); the risks need one; a figure sentence
//   needs a figure (facts.h FiguresIn) and words around it;
// - no near-duplicates: a sentence sharing three stems and 60% of the
//   smaller set's with one already chosen (in this part or, through `chosen`, an earlier one) is
//   passed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/pipelines/facts.h"

namespace ellm::pipelines {

// kObligations: what a party must do ("The Supplier shall deliver ..."),
// for contracts.
enum class BackbonePart { kPurpose, kFigures, kRisks, kConclusions, kObligations };

// "purpose", "figures", "risks", "conclusions", "obligations".
std::optional<BackbonePart> ParseBackbonePart(std::string_view name);
const char* BackbonePartName(BackbonePart part);

struct ChosenSentence {
  std::string text;  // as the document writes it (spaces collapsed)
  int page = 0;
  double score = 0;
  // A row of one of the document's tables (ingest/markdown_table.h), its
  // figures with their column labels: "Revenue — 2022: 1,204; 2023: 1,388".
  // Only figures are chosen from tables.
  bool table = false;
};

// Up to `k` sentences of `pages` for `part`, in document order. `chosen`
// (optional): the stems of sentences chosen before, for other parts; the
// new ones are added to it. Bounded: at most kMaxBackboneCandidates
// sentences are scored (the first ones of the document).
inline constexpr size_t kMaxBackboneCandidates = 20000;
std::vector<ChosenSentence> ChooseSentences(
    const std::vector<Page>& pages, BackbonePart part, size_t k,
    std::vector<std::vector<std::string>>* chosen = nullptr);

// Several parts at once (a summary's sections), `wants[i].k` sentences for
// `wants[i].part`, the result in the same order: the best (sentence, part)
// pairs are taken first, so a sentence goes to the part it serves best
// ("The board expects growth of 5% in 2026" to the conclusions, not the
// figures), and none is taken twice.
struct BackboneWant {
  BackbonePart part;
  size_t k = 0;
};
std::vector<std::vector<ChosenSentence>> ChooseForParts(
    const std::vector<Page>& pages, const std::vector<BackboneWant>& wants,
    std::vector<std::vector<std::string>>* chosen = nullptr);

// The lines a summary section shows for `sentences`: `- “text” [p. N]`
// (quoted: the document's own words), a table row `- text [p. N, table]`.
std::string QuotedLines(const std::vector<ChosenSentence>& sentences);

}  // namespace ellm::pipelines
