// Contracts compared clause by clause, for any kind of contract (issue 54).
// Pure functions over text (no model): each contract is split into its own
// clauses, A's clauses are aligned with B's by what they are about (not by
// number: clauses move and are renumbered), and each pair is classified from
// computed values and a word-level diff. The model only writes prose about
// these computed differences (run/fields.cc).
//
// Clause numbering recognised at the start of a line: "1.", "1.1", "12.3.4",
// "Clause 3 -", "Section 4.2", "ARTICLE V", "Article 2", "Schedule 2",
// "Annex A", "Appendix 1", "Exhibit B"; unnumbered headings in capitals
// ("PAYMENT TERMS"). Sub-clauses ("(a)", "(iv)", "1.1(a)") stay in their
// clause's text. Before the first clause: the preamble (parties) and the
// recitals ("WHEREAS", "Background", "Recitals"); "IN WITNESS WHEREOF" or
// "Signed by" starts the signature block.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/pipelines/facts.h"

namespace ellm::pipelines {

enum class ClauseKind { kPreamble, kRecital, kDefinitions, kClause, kSchedule, kSignature };
const char* ClauseKindName(ClauseKind kind);

struct Clause {
  ClauseKind kind = ClauseKind::kClause;
  std::string number;   // as written: "4.2", "V", "2" (Schedule 2); "" unnumbered
  std::string heading;  // "Payment terms"; "" when the clause has none
  std::string text;     // the clause's words after its number and heading, lines joined
  int first_page = 0, last_page = 0;
  int level = 1;  // 1 for "4", 2 for "4.2", ...
};

// The clauses of a contract, in document order. Never empty for a
// non-empty text (a text without numbering is one preamble clause).
std::vector<Clause> SplitClauses(const std::vector<Page>& pages);

// A party and the role word the contract defines for it: "Northwind Energy
// plc (the "Buyer")", "ACME LIMITED, a company incorporated in England
// ... (hereinafter referred to as "the Provider")", "X ("Licensor")".
struct Party {
  std::string name;  // "Northwind Energy plc"
  std::string role;  // "Buyer": the defined word, without "the" and quotes
  int page = 0;
};
// The parties defined in `pages` (first definition of each role wins).
std::vector<Party> FindParties(const std::vector<Page>& pages);

// A value stated in a clause: facts.h's kinds, compared by SameValue.
struct ClauseValue {
  Fact fact;
  std::string text;  // as written in the clause
};
std::vector<ClauseValue> ClauseValues(const Clause& clause);

enum class ClauseChange { kUnchanged, kReworded, kChanged, kAdded, kRemoved };
const char* ClauseChangeName(ClauseChange change);

// One step of a word-level diff: '=' kept, '-' only in A, '+' only in B.
struct WordEdit {
  char op = '=';
  std::string text;  // the words, separated by single spaces
};
// The word-level diff of two texts (longest common subsequence of words;
// texts of more than 3000 words each compare as one deletion and one
// insertion).
std::vector<WordEdit> DiffWords(std::string_view a, std::string_view b);

// A value that differs between two aligned clauses: in A and not B, in B
// and not A, or both sides of one kind when each side has exactly one
// value of that kind the other lacks ("30 days" -> "60 days").
struct ValueChange {
  FactKind kind = FactKind::kNumber;
  std::string a, b;  // as written; "" when that side has none
};

struct AlignedClause {
  int a = -1, b = -1;  // indices into the clauses of A and B; -1: none
  ClauseChange change = ClauseChange::kUnchanged;
  bool moved = false;     // matched, but out of order relative to the other matches
  double similarity = 0;  // 0..1, of the matched pair
  std::vector<ValueChange> values;
  std::vector<WordEdit> redline;  // for kReworded and kChanged
  std::string why;                // for kChanged: what differs, in words
};

// A role whose party differs: renamed, swapped with another role, or
// defined on one side only ("" on the other).
struct PartyChange {
  std::string role, a, b;
};

struct ContractComparison {
  std::vector<Clause> a, b;
  std::vector<Party> parties_a, parties_b;
  std::vector<PartyChange> party_changes;
  // Pairs in B's order, A's removed clauses placed after their predecessor
  // in A.
  std::vector<AlignedClause> aligned;
  int Count(ClauseChange change) const;
  int Moved() const;
};

ContractComparison CompareContracts(const std::vector<Page>& a, const std::vector<Page>& b);

// A base contract and its amendments compared in turn (version 1 with 2,
// 2 with 3, ...): each clause followed through the versions. `index[v]` is
// the clause's index in version v (-1: not in it); `changes[s]` what step s
// (version s to s + 1) did to it, nullopt where it is in neither version.
struct ClauseHistory {
  std::vector<int> index;
  std::vector<std::optional<ClauseChange>> changes;
  std::vector<bool> moved;  // per step
  bool Changed() const;     // anything but unchanged and in place, at any step
};
// REQUIRES: steps[s].b is steps[s + 1].a (the same version's clauses).
// Histories in the base's order, then the clauses each step added.
std::vector<ClauseHistory> ClauseHistories(const std::vector<ContractComparison>& steps);
// A Markdown table of the histories with a change: the clause (as its last
// version labels it), then one column per step named by `names` ("v1 ->
// v2"). REQUIRES: names.size() == steps.size() + 1.
std::string HistoryMarkdown(const std::vector<ContractComparison>& steps,
                            const std::vector<ClauseHistory>& histories,
                            const std::vector<std::string>& names);
// The JSON form: [{"index": [..], "changes": ["changed", null, ...],
// "moved": [..], "label": "..."}], every history.
nlohmann::ordered_json HistoryJson(const std::vector<ContractComparison>& steps,
                                   const std::vector<ClauseHistory>& histories);

// The result JSON's "clauses" object: documents' clauses, parties, aligned
// pairs with their values and redline, and counts.
nlohmann::ordered_json ComparisonJson(const ContractComparison& c);
// A Markdown section: counts, then one table row per clause that is not
// unchanged ("A 4.2 p.2 | B 5.1 p.3 | changed, moved | 30 days -> 60 days").
std::string ComparisonMarkdown(const ContractComparison& c);
// The differences as plain lines for the model's prose and its check
// (KeepSupportedSentences): one line per changed, added or removed clause.
std::string ComparisonDifferences(const ContractComparison& c);
// The key-term table, a view over the clause comparison for any kind of
// contract (no model): one row per party role either contract defines,
// then, for the terms these contracts have, the values of the clauses about
// them — date of agreement (the preamble), governing law, liability cap,
// termination notice, confidentiality period, interest rate, price,
// payment terms, delivery date, term. A clause is about a term when its
// heading or its first sentence names it ("Fees", "terminate"); each value
// goes to the first such term that takes its kind.
struct TermValue {
  std::string text;          // as written: "EUR 96 million", "Spain"
  std::optional<Fact> fact;  // none for names and laws (compared as words)
  int page = 0;
  std::string clause;  // "4.2 Payment terms", "preamble"
};
struct KeyTermRow {
  std::string name;    // "price", "buyer" (a role, lowercased)
  std::string label;   // "Price", "Buyer"
  std::string status;  // "same", "different", "only in A", "only in B"
  std::vector<TermValue> a, b;
};
std::vector<KeyTermRow> KeyTermsView(const ContractComparison& c);
// "| Price | EUR 96 million (A p.1) | EUR 118 million (B p.1) | different |".
std::string KeyTermsMarkdown(const std::vector<KeyTermRow>& rows);
// The result's "comparison": {field, label, status, a, b}, each side's
// first value as value/page/verified/source and all of them in "values".
nlohmann::ordered_json KeyTermsJson(const std::vector<KeyTermRow>& rows);
// One line per term that is not the same, for the model's prose.
std::string KeyTermsDifferences(const std::vector<KeyTermRow>& rows);

// A self-contained HTML page (no scripts, no network) from ComparisonJson's
// object (as a stored result holds it): the parties, then every aligned
// pair side by side, deletions and insertions marked within changed
// clauses, added/removed/moved clauses flagged, pages named. Throws
// nlohmann::json::exception on an object of another shape.
std::string ComparisonHtml(const nlohmann::ordered_json& clauses, const std::string& name_a,
                           const std::string& name_b);

}  // namespace ellm::pipelines
