// What kind of document a summary is for (issue 56 item 4): a report gets
// Purpose / Key figures / Risks / Conclusions, a manual or specification
// what it is for, its facts and its cautions, a contract its parties,
// money and obligations (the pipeline's `kinds:`, pipeline_spec.h). Chosen
// from the document's own words, without a model.
#pragma once

#include <string>
#include <vector>

#include "ellm/pipelines/facts.h"

namespace ellm::pipelines {

struct DocumentKind {
  std::string kind;  // "report", "manual" or "contract"
  std::string why;   // what decided it, for the result ("defines the parties Buyer and Seller")
};

// contract: it defines at least two parties by role ("(the "Buyer")",
// "hereinafter referred to as"), or calls itself "this agreement" / "this
// contract" and binds with "shall" in numbered clauses; manual: its title
// or first pages call it a manual, guide, handbook, tutorial, specification,
// howto, cookbook or FAQ, and it has headings or several pages,
// and does not call itself a report; else report. Reads at most the first
// kMaxKindPages pages.
inline constexpr size_t kMaxKindPages = 40;
DocumentKind ClassifyDocument(const std::string& title, const std::vector<Page>& pages,
                              size_t headings);

}  // namespace ellm::pipelines
