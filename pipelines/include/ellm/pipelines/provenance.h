// Provenance: what a model's answers become once checked against the
// document. Pure functions over text (no model): a field's answer resolved
// to a typed value and located in the source; two documents' fields
// compared in code; the tables and JSON a result carries; a summary's
// figures looked up page by page. The runner (run/fields.cc,
// run/pipeline_processor.cc) feeds them the model's words.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ellm/pipelines/facts.h"
#include "ellm/pipelines/pipeline_spec.h"

namespace ellm::pipelines {

// One field as one document gives it.
struct FieldValue {
  std::string answer;      // the model's words after the field's lead (the runner: OwnAnswer)
  std::string value;       // the value of the field's type in `answer`; "" none
  std::string normalized;  // Fact::Normalized(), or the lowercased words of a text value
  // Where the document states the value (the span's text is the document's
  // own spelling); nullopt: found nowhere, the value is unverified.
  std::optional<SourceSpan> source;
  // Set by BindRoles: how the document's own defined terms changed or
  // contradicted the model's answer ("swapped with supplier: ...",
  // "the document names it the Supplier"). A contradicted value is not
  // verified even though it stands in the document.
  std::string role_note;
  bool role_conflict = false;

  bool present() const { return !value.empty(); }
  bool verified() const { return source.has_value() && !role_conflict; }
};

// The part of `answer` (the model's words after fields[i]'s lead) that
// answers field i: cut where the answer runs on into another field, a
// small model's habit ("Northwind Energy plc (the Buyer) and the name of
// the Supplier is Aero Turbines SA" -> "Northwind Energy plc (the Buyer)").
// It runs on at a clause boundary (" and ", ", ", "; ", ". ") whose next
// few words name another field (a word starting with one of that field's
// keywords, and none of field i's), or where a field's lead begins again
// ("According to the contract, ..."). The cut is trimmed of trailing
// spaces and punctuation other than ")" and "%". REQUIRES: i < fields.size().
std::string OwnAnswer(const std::vector<PipelineSpec::Field>& fields, size_t i,
                      const std::string& answer);

// Resolves the model's `answer` for `field` against `pages`: the first
// value of the field's type in it (a text value: the answer up to its first
// ", ", "; " or " (", trimmed of punctuation), located by facts.h Locate with
// the field's keywords.
FieldValue ResolveField(const PipelineSpec::Field& field, const std::string& answer,
                        const std::vector<Page>& pages);

// The fields (of type text) whose keyword the document binds to `value`
// wherever it stands: a defined term right after it ("Northwind Energy plc
// (the Buyer)", "X (hereinafter the "Supplier")", "X, as Seller") or a
// label right before it ("Buyer: X"). Field indices, ascending.
std::vector<size_t> BoundRoles(const std::vector<PipelineSpec::Field>& fields,
                               const std::string& value, const std::vector<Page>& pages);

// Holds the text fields of one document to the roles the document itself
// assigns. When field i's value is bound only to field j and j's only to i,
// the model named the parties the wrong way round: the two values swap
// (each gets a role_note). When i's value is bound only to other fields,
// it is kept but marked role_conflict (unverified). Values the document
// binds to no role are left as they are; an answer that is itself a role
// word ("the Buyer") is no value. Returns the number of swaps.
int BindRoles(const std::vector<PipelineSpec::Field>& fields, std::vector<FieldValue>* values,
              const std::vector<Page>& pages);

// `line` without the page markers a model copies from its input ("[page
// 2]", "(p. 2)", "[pp. 3-4]"): their numbers are no figures, and pages are
// cited by the checks themselves.
std::string StripPageMarkers(const std::string& line);

enum class Agreement { kSame, kDifferent, kOnlyInA, kOnlyInB, kInNeither };
// "same", "different", "only in A", "only in B", "in neither".
const char* AgreementName(Agreement a);
// Values compare by their normalized form (text: by words); a value that is
// absent counts as missing, an unverified one still counts.
Agreement CompareField(const FieldValue& a, const FieldValue& b);

// "EUR 96 million (A p.1)": the document's spelling and its page; an
// unverified value as the model wrote it, marked "(unverified)"; "—" none.
std::string CitedCell(const FieldValue& v, const std::string& side);

// Markdown. One document: | Term | Value |. Two: | Term | A | B | Agreement |,
// each cell cited; then nothing else (the prose is the runner's).
std::string RenderFieldsTable(const std::vector<PipelineSpec::Field>& fields,
                              const std::vector<FieldValue>& values);
std::string RenderComparisonTable(const std::vector<PipelineSpec::Field>& fields,
                                  const std::vector<FieldValue>& a,
                                  const std::vector<FieldValue>& b);
// One line per field for the prose prompt: "- Total price: EUR 96 million in
// A, EUR 118 million in B (different)."
std::string DifferencesList(const std::vector<PipelineSpec::Field>& fields,
                            const std::vector<FieldValue>& a, const std::vector<FieldValue>& b);

// {"price": {"label", "type", "answer", "value", "normalized", "verified",
// "page", "source", "span": [begin, end]}, ...} in field order.
nlohmann::ordered_json FieldsJson(const std::vector<PipelineSpec::Field>& fields,
                                  const std::vector<FieldValue>& values);

// A summary section's lines checked figure by figure (facts.h FiguresIn;
// page markers the model wrote are dropped first, ours replace them).
struct FigureCheck {
  std::string text;                     // kept lines, each with " [p. N]" when it has figures
  std::vector<std::string> unverified;  // removed lines (a figure found nowhere)
  int figures_total = 0;                // figures in all lines, kept or not
  int figures_found = 0;
  nlohmann::ordered_json citations = nlohmann::ordered_json::array();  // {line, pages}
};
FigureCheck VerifyFigureLines(const std::string& body, const std::vector<Page>& pages);

// Figure lines of a section after map-reduce: the reduce step's `body`
// (already verified) plus the map steps' verified lines (`mapped`) that state
// a figure `body` lacks, ordered by their first cited page ("[p. N]"),
// at most `max_lines`. A small model's reduce step keeps what its last
// notes said; the figures of the first pages must not be lost for that.
std::string MergeFigureLines(const std::string& body, const std::vector<std::string>& mapped,
                             size_t max_lines);

// Drops the sentences of `prose` that state a figure absent from `allowed`
// (the computed differences): the model may rephrase them, not add any.
// Returns the kept text; `dropped` counts what went.
std::string KeepSupportedSentences(const std::string& prose, const std::string& allowed,
                                   int* dropped);

}  // namespace ellm::pipelines
