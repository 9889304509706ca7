// Contracts compared clause by clause (pipelines/contracts.h): the
// numbering styles, the parties' defined roles, values, the word diff, and
// hand-drafted pairs in tests/data/contracts/ whose differences were written
// down by hand (expected.json): every aligned pair they do not list must be
// unchanged, so a reported difference that is not there fails as surely as
// a missed one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "ellm/pipelines/backbone.h"
#include "ellm/pipelines/contracts.h"
#include "test_env.h"

namespace ellm::pipelines {
namespace {

namespace fs = std::filesystem;

std::vector<Page> OnePage(const std::string& text) { return {{1, text}}; }

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Pages split at form feeds, numbered from 1 (as pdftotext writes them).
std::vector<Page> Pages(const std::string& text) {
  std::vector<Page> out;
  size_t at = 0;
  int n = 1;
  while (true) {
    const size_t ff = text.find('\f', at);
    out.push_back({n++, text.substr(at, ff == std::string::npos ? std::string::npos : ff - at)});
    if (ff == std::string::npos) break;
    at = ff + 1;
  }
  return out;
}

TEST(ContractClauses, EveryCommonNumberingStyle) {
  const std::vector<Clause> c =
      SplitClauses(OnePage("MASTER AGREEMENT\nThis Agreement is made between A Ltd and B Ltd.\n"
                           "WHEREAS the parties wish to cooperate.\n"
                           "ARTICLE I - DEFINITIONS\nIn this Agreement words have their meanings.\n"
                           "Section 1.2 Scope. The Supplier shall supply the goods.\n"
                           "(a) first item; and\n(b) second item.\n"
                           "2. Price\nThe price is EUR 10,000.\n"
                           "2.1 Payment is due within 30 days.\n"
                           "Clause 3 - Term\nThree years.\n"
                           "GOVERNING LAW\n4. This Agreement is governed by the laws of France.\n"
                           "1. a list item inside clause 4, not a clause\n"
                           "IN WITNESS WHEREOF the parties have signed.\nSigned: A Ltd\n"
                           "Schedule 2 - Goods\nTurbines.\n"));
  std::vector<std::string> got;
  for (const Clause& x : c) {
    got.push_back(std::string(ClauseKindName(x.kind)) + "|" + x.number + "|" + x.heading);
  }
  const std::vector<std::string> want = {"preamble||",
                                         "recital||",
                                         "definitions|I|DEFINITIONS",
                                         "clause|1.2|Scope",
                                         "clause|2|Price",
                                         "clause|2.1|",
                                         "clause|3|Term",
                                         "clause|4|GOVERNING LAW",
                                         "signature||",
                                         "schedule|2|Goods"};
  EXPECT_EQ(got, want);
  ASSERT_EQ(c.size(), want.size());
  EXPECT_NE(c[3].text.find("(b) second item."), std::string::npos) << "sub-clauses stay in text";
  EXPECT_NE(c[7].text.find("a list item inside clause 4"), std::string::npos);
  EXPECT_EQ(c[4].text, "The price is EUR 10,000.");
}

TEST(ContractClauses, RunInHeadingsAndSubClausesOfReflowedText) {
  const std::vector<Clause> c = SplitClauses(
      OnePage("4. REPAIRS 4.1 The Landlord shall repair the roof. 4.2 The Tenant shall clean.\n"
              "5. Fees and Payment The Customer shall pay within 30 days. Section 6 Term. Two "
              "years.\n"));
  std::vector<std::string> got;
  for (const Clause& x : c) got.push_back(x.number + "|" + x.heading + "|" + x.text);
  const std::vector<std::string> want = {
      "4|REPAIRS|", "4.1||The Landlord shall repair the roof.", "4.2||The Tenant shall clean.",
      "5|Fees and Payment|The Customer shall pay within 30 days.", "6|Term|Two years."};
  EXPECT_EQ(got, want);
}

TEST(ContractClauses, SignatureBlockRunningOnFromTheLastClauseStartsItsOwn) {
  const std::vector<Clause> c = SplitClauses(
      OnePage("7. Governing Law This Agreement is governed by the laws of Ohio. IN WITNESS "
              "WHEREOF the parties have signed. SIGNED by the Buyer.\n"));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].text, "This Agreement is governed by the laws of Ohio.");
  EXPECT_EQ(c[1].kind, ClauseKind::kSignature);
  EXPECT_EQ(c[1].text, "IN WITNESS WHEREOF the parties have signed. SIGNED by the Buyer.");
}

TEST(ContractClauses, PagesFollowTheClauses) {
  const std::vector<Clause> c =
      SplitClauses({{1, "1. Scope\nThe scope.\n2. Price\nThe price"}, {2, "is EUR 5.\n3\n"}});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].first_page, 1);
  EXPECT_EQ(c[1].last_page, 2);
  EXPECT_EQ(c[1].text, "The price is EUR 5.") << "the page number line is furniture";
}

TEST(ContractParties, RolesFromTheContractsOwnDefinitions) {
  const std::vector<Party> p = FindParties(
      OnePage("This Lease is made between ACME PROPERTIES LIMITED, a company registered in England "
              "(company number 123) (the \xE2\x80\x9CLandlord\xE2\x80\x9D) and Jane Smith "
              "(\"Tenant\") on 1 May 2026 (the \"Effective Date\")."));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "ACME PROPERTIES LIMITED");
  EXPECT_EQ(p[0].role, "Landlord");
  EXPECT_EQ(p[1].name, "Jane Smith");
  EXPECT_EQ(p[1].role, "Tenant");
  const std::vector<Party> q = FindParties(
      OnePage("by and between Orion Labs GmbH, hereinafter referred to as \"the Discloser\", and "
              "Vega Analytics LLC, hereinafter called the \"Recipient\"."));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].name, "Orion Labs GmbH");
  EXPECT_EQ(q[0].role, "Discloser");
  EXPECT_EQ(q[1].name, "Vega Analytics LLC");
  EXPECT_EQ(q[1].role, "Recipient");
}

TEST(ContractDiff, WordLevelInsertionsAndDeletions) {
  const std::vector<WordEdit> d =
      DiffWords("pay within 30 days of the invoice", "pay within 45 days of each invoice");
  std::string shown;
  for (const WordEdit& e : d) shown += std::string(1, e.op) + "[" + e.text + "]";
  EXPECT_EQ(shown, "=[pay within]-[30]+[45]=[days of]-[the]+[each]=[invoice]");
}

// A reordered, reworded copy is not a different contract.
TEST(ContractCompare, RewordedAndMovedClausesAreNotChanges) {
  const auto c = CompareContracts(
      OnePage("1. Term\nThis Agreement starts on 1 April 2026 and lasts 24 months.\n"
              "2. Law\nThis Agreement is governed by the laws of England.\n"),
      OnePage("1. Governing Law\nThis Agreement is governed by the laws of England.\n"
              "2. Duration\nThis Agreement commences on 1 April 2026 and lasts 24 months.\n"));
  ASSERT_EQ(c.aligned.size(), 2u);
  EXPECT_EQ(c.Count(ClauseChange::kChanged), 0);
  EXPECT_EQ(c.Count(ClauseChange::kUnchanged), 1);
  EXPECT_EQ(c.Count(ClauseChange::kReworded), 1);
  EXPECT_EQ(c.Moved(), 1);
}

TEST(ContractCompare, AnotherCountryIsAChange) {
  const auto c =
      CompareContracts(OnePage("7. Law\nThis Agreement is governed by the laws of England.\n"),
                       OnePage("7. Law\nThis Agreement is governed by the laws of France.\n"));
  ASSERT_EQ(c.aligned.size(), 1u);
  EXPECT_EQ(c.aligned[0].change, ClauseChange::kChanged);
  EXPECT_NE(c.aligned[0].why.find("england -> france"), std::string::npos) << c.aligned[0].why;
}

TEST(ContractCompare, SwappedObligationIsAChange) {
  const auto c = CompareContracts(
      OnePage("Acme Ltd (the \"Supplier\") and Beta Ltd (the \"Buyer\").\n"
              "5. Insurance\nThe Supplier shall insure the goods until delivery to the Buyer.\n"),
      OnePage("Acme Ltd (the \"Supplier\") and Beta Ltd (the \"Buyer\").\n"
              "5. Insurance\nThe Buyer shall insure the goods until delivery to the Supplier.\n"));
  ASSERT_EQ(c.aligned.size(), 2u);
  EXPECT_EQ(c.aligned[1].change, ClauseChange::kChanged);
  EXPECT_NE(c.aligned[1].why.find("parties"), std::string::npos) << c.aligned[1].why;
}

// A renamed party is one change of the contract (who is the Borrower), not
// a change of every clause that names it; swapped roles are two.
TEST(ContractCompare, RenamedAndSwappedPartiesAreReportedOncePerRole) {
  const std::string clauses =
      "\n1. The Loan\nThe Lender agrees to lend the Borrower USD 50,000.\n"
      "2. Repayment\nThe Borrower will repay the Loan within 30 days of a demand.\n";
  const auto renamed = CompareContracts(
      OnePage("Marlow & Finch LLP (the \"Lender\") and Vega Analytics LLC (the \"Borrower\")." +
              clauses),
      OnePage("Marlow & Finch LLP (the \"Lender\") and Orion Labs GmbH (the \"Borrower\")." +
              clauses));
  ASSERT_EQ(renamed.party_changes.size(), 1u);
  EXPECT_EQ(renamed.party_changes[0].role, "Borrower");
  EXPECT_EQ(renamed.party_changes[0].a, "Vega Analytics LLC");
  EXPECT_EQ(renamed.party_changes[0].b, "Orion Labs GmbH");
  EXPECT_EQ(renamed.Count(ClauseChange::kChanged), 0);
  const auto swapped = CompareContracts(
      OnePage("Acme Ltd (the \"Lender\") and Beta Ltd (the \"Borrower\")." + clauses),
      OnePage("Beta Ltd (the \"Lender\") and Acme Ltd (the \"Borrower\")." + clauses));
  EXPECT_EQ(swapped.party_changes.size(), 2u);
  EXPECT_NE(ComparisonMarkdown(swapped).find("The Lender: Acme Ltd in A, Beta Ltd in B."),
            std::string::npos)
      << ComparisonMarkdown(swapped);
}

// The clause of a side named as in expected.json: its number, or its kind
// for unnumbered ones ("preamble").
std::string Name(const Clause& c) { return c.number.empty() ? ClauseKindName(c.kind) : c.number; }

// The pages of a PDF as the pipelines read them (the sandboxed extractor,
// ingest::RenderForModel): lines of a block reflowed into one.
std::vector<Page> PdfPages(const fs::path& pdf) {
  ingest::ExtractOptions options;
  options.extractor_path = ELLM_EXTRACTOR_PATH;
  auto doc = ingest::ExtractDocument(pdf.string(), options);
  EXPECT_TRUE(doc.ok()) << pdf << ": " << doc.status().ToString();
  return doc.ok() ? SplitPages(ingest::RenderForModel(*doc)) : std::vector<Page>{};
}

// Issue 54 item 5: the key-term table is a view over the comparison; each
// row expected.json lists has its values and status, and any other row is
// the same on both sides.
void CheckKeyTerms(const ContractComparison& c, const nlohmann::json& expected) {
  ASSERT_TRUE(expected.is_object()) << "expected.json has no key_terms";
  const std::vector<KeyTermRow> rows = KeyTermsView(c);
  const std::string shown = KeyTermsMarkdown(rows);
  for (const auto& item : expected.items()) {
    const std::string label = item.key();
    const nlohmann::json& want = item.value();
    auto row = std::find_if(rows.begin(), rows.end(),
                            [&](const KeyTermRow& r) { return r.label == label; });
    ASSERT_NE(row, rows.end()) << "no row " << label << "\n" << shown;
    EXPECT_EQ(row->status, want["status"].get<std::string>()) << label << "\n" << shown;
    for (const char* side : {"a", "b"}) {
      std::vector<std::string> got;
      for (const TermValue& v : side[0] == 'a' ? row->a : row->b) got.push_back(v.text);
      EXPECT_EQ(got, want[side].get<std::vector<std::string>>()) << label << " " << side;
    }
  }
  for (const KeyTermRow& r : rows) {
    if (!expected.contains(r.label)) {
      EXPECT_EQ(r.status, "same") << r.label << "\n" << shown;
    }
  }
}

// `ext`: "txt" (the text as written) or "pdf" (make_pdfs.py's rendering).
// `ext`: "txt", "pdf", or "_scan.pdf" (the PDFs scanned to images: read by OCR).
void CheckPair(const fs::path& dir, const std::string& ext) {
  SCOPED_TRACE(dir.filename().string() + " (" + ext + ")");
  const auto expected = nlohmann::json::parse(Read(dir / "expected.json"));
  const ContractComparison c =
      ext == "txt"   ? CompareContracts(Pages(Read(dir / "a.txt")), Pages(Read(dir / "b.txt")))
      : ext == "pdf" ? CompareContracts(PdfPages(dir / "a.pdf"), PdfPages(dir / "b.pdf"))
                     : CompareContracts(PdfPages(dir / ("a" + ext)), PdfPages(dir / ("b" + ext)));
  const std::string shown = ComparisonMarkdown(c);
  for (const char* side : {"A", "B"}) {
    const auto& parties = std::string(side) == "A" ? c.parties_a : c.parties_b;
    std::map<std::string, std::string> got;
    for (const Party& p : parties) got[p.role] = NormalizeWords(p.name);
    std::map<std::string, std::string> want;
    for (const auto& [role, name] : expected["parties"][side].items()) {
      want[role] = NormalizeWords(name.get<std::string>());
    }
    EXPECT_EQ(got, want) << "parties of " << side;
  }
  std::vector<bool> listed(c.aligned.size(), false);
  for (const auto& e : expected["clauses"]) {
    const std::string ea = e["a"].is_null() ? "" : e["a"].get<std::string>();
    const std::string eb = e["b"].is_null() ? "" : e["b"].get<std::string>();
    size_t found = c.aligned.size();
    for (size_t i = 0; i < c.aligned.size(); ++i) {
      const AlignedClause& x = c.aligned[i];
      const std::string ga = x.a >= 0 ? Name(c.a[static_cast<size_t>(x.a)]) : "";
      const std::string gb = x.b >= 0 ? Name(c.b[static_cast<size_t>(x.b)]) : "";
      if (ga == ea && gb == eb) found = i;
    }
    ASSERT_LT(found, c.aligned.size()) << "no pair A " << ea << " / B " << eb << "\n" << shown;
    listed[found] = true;
    const AlignedClause& x = c.aligned[found];
    EXPECT_EQ(ClauseChangeName(x.change), e["status"].get<std::string>())
        << "A " << ea << " / B " << eb << ": " << x.why << "\n"
        << shown;
    EXPECT_EQ(x.moved, e.value("moved", false)) << "A " << ea << " / B " << eb;
    if (e.contains("values")) {
      std::vector<std::pair<std::string, std::string>> got, want;
      for (const ValueChange& v : x.values) got.emplace_back(v.a, v.b);
      for (const auto& v : e["values"]) want.emplace_back(v[0], v[1]);
      EXPECT_EQ(got, want) << "A " << ea << " / B " << eb;
    }
  }
  CheckKeyTerms(c, expected["key_terms"]);
  for (size_t i = 0; i < c.aligned.size(); ++i) {
    if (listed[i]) continue;
    const AlignedClause& x = c.aligned[i];
    EXPECT_TRUE(x.change == ClauseChange::kUnchanged && !x.moved)
        << "not in expected.json: A " << (x.a >= 0 ? Name(c.a[static_cast<size_t>(x.a)]) : "-")
        << " / B " << (x.b >= 0 ? Name(c.b[static_cast<size_t>(x.b)]) : "-") << " "
        << ClauseChangeName(x.change) << (x.moved ? ", moved" : "") << ": " << x.why;
  }
}

TEST(ContractCompare, HandDraftedPairsGiveTheirWrittenDifferences) {
  const fs::path root = fs::path(ELLM_SOURCE_DIR) / "tests/data/contracts";
  int pairs = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "expected.json")) continue;
    CheckPair(entry.path(), "txt");
    ++pairs;
  }
  EXPECT_GE(pairs, 3);
}

// The same pairs as PDFs: headings in bold run into their text and
// sub-clauses into their clause's paragraph once extracted ("4. REPAIRS
// 4.1 The Landlord shall ... 4.2 The Tenant ...").
TEST(ContractCompare, HandDraftedPdfPairsGiveTheSameDifferences) {
  const fs::path root = fs::path(ELLM_SOURCE_DIR) / "tests/data/contracts";
  int pairs = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "a.pdf")) continue;
    CheckPair(entry.path(), "pdf");
    ++pairs;
  }
  EXPECT_GE(pairs, 3);
}

// Issue 58: the same pairs scanned (tests/data/pdf/make_scans.py: 200 dpi
// grey images, no text layer), read by OCR, give the same differences.
TEST(ContractCompare, ScannedPairsGiveTheSameDifferences) {
  const fs::path root = fs::path(ELLM_SOURCE_DIR) / "tests/data/contracts";
  int pairs = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "a_scan.pdf")) continue;
    CheckPair(entry.path(), "_scan.pdf");
    ++pairs;
  }
  EXPECT_GE(pairs, 2);
}

// The fuzz target's promises (tests/fuzz/contracts_fuzz.cc) on its corpus:
// every clause of A and of B in exactly one aligned pair, and a page.
TEST(ContractCompare, FuzzCorpusKeepsItsPromises) {
  const fs::path root = fs::path(ELLM_SOURCE_DIR) / "tests/data/contracts/fuzz_corpus";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    SCOPED_TRACE(entry.path().filename().string());
    const std::string input = Read(entry.path());
    const size_t nul = input.find('\0');
    const auto c = CompareContracts(Pages(input.substr(0, nul)),
                                    Pages(nul == std::string::npos ? "" : input.substr(nul + 1)));
    std::vector<int> seen_a(c.a.size(), 0), seen_b(c.b.size(), 0);
    for (const AlignedClause& x : c.aligned) {
      ASSERT_LT(x.a, static_cast<int>(c.a.size()));
      ASSERT_LT(x.b, static_cast<int>(c.b.size()));
      if (x.a >= 0) ++seen_a[static_cast<size_t>(x.a)];
      if (x.b >= 0) ++seen_b[static_cast<size_t>(x.b)];
    }
    EXPECT_EQ(std::count(seen_a.begin(), seen_a.end(), 1), static_cast<long>(seen_a.size()));
    EXPECT_EQ(std::count(seen_b.begin(), seen_b.end(), 1), static_cast<long>(seen_b.size()));
    EXPECT_NE(ComparisonHtml(ComparisonJson(c), "a", "b").find("</html>"), std::string::npos);
    for (const KeyTermRow& r : KeyTermsView(c)) {
      EXPECT_FALSE(r.a.empty() && r.b.empty()) << r.label;
      EXPECT_TRUE(r.status == "same" || r.status == "different" || r.status == "only in A" ||
                  r.status == "only in B")
          << r.status;
    }
    const std::vector<Page> pages = Pages(input.substr(0, nul));
    const auto own = ChooseForParts(pages, {{BackbonePart::kPurpose, 2},
                                            {BackbonePart::kFigures, 4},
                                            {BackbonePart::kRisks, 3},
                                            {BackbonePart::kConclusions, 2}});
    const size_t want[] = {2, 4, 3, 2};
    for (size_t i = 0; i < own.size(); ++i) {
      EXPECT_LE(own[i].size(), want[i]);
      for (const auto& chosen : own[i]) {
        EXPECT_GE(chosen.page, 1);
        EXPECT_LE(chosen.page, static_cast<int>(pages.size()));
      }
    }
    const auto back =
        CompareContracts(Pages(nul == std::string::npos ? "" : input.substr(nul + 1)), pages);
    EXPECT_GE(ClauseHistories({c, back}).size(), c.a.size());
    ++files;
  }
  EXPECT_GE(files, 4);
}

TEST(ContractReport, HtmlIsSelfContainedAndMarksEdits) {
  const auto c = CompareContracts(OnePage("2. Fees\nThe fee is USD 20,000 per month.\n"),
                                  OnePage("2. Fees\nThe fee is USD 21,000 per month.\n"));
  const std::string html = ComparisonHtml(ComparisonJson(c), "a<1>.pdf", "b.pdf");
  EXPECT_NE(html.find("<del>20,000</del>"), std::string::npos) << html;
  EXPECT_NE(html.find("<ins>21,000</ins>"), std::string::npos) << html;
  EXPECT_NE(html.find("a&lt;1&gt;.pdf"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos) << "no network resource";
  const auto j = ComparisonJson(c);
  EXPECT_EQ(j["counts"]["changed"], 1);
  EXPECT_EQ(j["aligned"][0]["values"][0]["a"], "USD 20,000");
}

// Issue 54's n-way run: a base and two amendments; each clause followed
// through the versions, by content (the fees clause is renumbered).
TEST(ContractHistory, EachClauseIsFollowedThroughTheAmendments) {
  const std::string base =
      "1. Fees\nThe Customer shall pay USD 20,000 per month within 30 days of each invoice.\n\n"
      "2. Term\nThis Agreement continues for 24 months from 1 April 2026.\n\n"
      "3. Exclusivity\nThe Customer shall not engage any other provider of support services.\n\n"
      "4. Governing Law\nThis Agreement is governed by the laws of England and Wales.\n";
  std::string first = base;  // the term goes to 36 months
  first.replace(first.find("24 months"), 9, "36 months");
  std::string second = first;  // exclusivity removed, data protection added
  second.replace(second.find("3. Exclusivity"),
                 second.find("4. Governing") - second.find("3. Exclusivity"),
                 "3. Data Protection\nThe Provider shall process personal data only on the "
                 "documented instructions of the Customer.\n\n");
  const std::vector<ContractComparison> steps = {CompareContracts(Pages(base), Pages(first)),
                                                 CompareContracts(Pages(first), Pages(second))};
  const std::vector<ClauseHistory> h = ClauseHistories(steps);
  std::map<std::string, std::string> seen;  // label -> the changes, step by step
  for (const auto& e : HistoryJson(steps, h)) {
    std::string changes;
    for (const auto& c : e["changes"]) changes += (c.is_null() ? "-" : c.get<std::string>()) + ";";
    seen[e["label"].get<std::string>()] = changes;
  }
  EXPECT_EQ(seen["1 Fees (p. 1)"], "unchanged;unchanged;");
  EXPECT_EQ(seen["2 Term (p. 1)"], "changed;unchanged;");
  EXPECT_EQ(seen["3 Exclusivity (p. 1)"], "unchanged;removed;");
  EXPECT_EQ(seen["3 Data Protection (p. 1)"], "-;added;");
  EXPECT_EQ(seen["4 Governing Law (p. 1)"], "unchanged;unchanged;");
  const std::string table = HistoryMarkdown(steps, h, {"base", "first", "second"});
  EXPECT_NE(table.find("| Clause | base \u2192 first | first \u2192 second |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| 2 Term (p. 1) | changed | unchanged |"), std::string::npos) << table;
  EXPECT_EQ(table.find("Fees"), std::string::npos) << table;  // unchanged throughout
}

}  // namespace
}  // namespace ellm::pipelines
