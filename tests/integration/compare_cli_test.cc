// `ellm compare` on the two sample contracts (the ones the end-to-end test
// sends through the daemon), with each way a bf16 KV cache can compute its
// attention scores: the key-term table is computed from each contract's own
// clauses (it once came from the model's answers, and with the bf16 pair
// scores contract A's buyer answer ran on into the supplier), and the
// model's prose under it is written either way.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

class CompareCli : public ::testing::TestWithParam<const char*> {};

TEST_P(CompareCli, KeyTermsAreComputedAndProseWrittenWithEitherAttentionScores) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-compare-cli");
  const std::string samples = SourceDir() + "/configs/samples/";
  const std::string scores = GetParam();
  std::string out;
  // The end-to-end test's context (its contracts go in one pass).
  const int rc = RunCli("compare '" + samples + "contract-a.pdf' '" + samples +
                            "contract-b.pdf' --model '" + model + "' --db '" + dir +
                            "/ellm.db' --ctx 1536 --threads 2 --json --attn-scores " + scores,
                        &out);
  ASSERT_EQ(rc, 0) << out;
  const size_t end = out.rfind("\n}\n");
  ASSERT_NE(end, std::string::npos) << out;
  const auto result = nlohmann::json::parse(out.substr(0, end + 2), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << out;
  EXPECT_EQ(result["attn_scores"], scores);  // the flag reached the engine's session
  const std::string table = result["text"].get<std::string>();
  for (const char* row :
       {"| Buyer | Northwind Energy plc (A p.1) | Northwind Energy plc (B p.1) | same |",
        "| Supplier | Aero Turbines SA (A p.1) | Aero Turbines SA (B p.1) | same |",
        "| Amounts payable | EUR 96 million (A p.1) | EUR 118 million (B p.1) | different |",
        "| Termination notice | 30 days (A p.2) | 90 days (B p.2) | different |",
        "| Governing law | Spain (A p.2) | England and Wales (B p.2) | different |"}) {
    EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
  }
  // The table is computed from each contract's own clauses (issue 54 item
  // 5): no cell of one contract shows the other's value, and the model
  // wrote only the prose under it, from the computed differences.
  const std::set<std::string> only_a = {"30 days", "EUR 96 million", "Spain", "30 June 2026"};
  const std::set<std::string> only_b = {"90 days", "EUR 118 million", "England and Wales",
                                        "31 December 2026"};
  for (const auto& row : result["json"]["comparison"]) {
    for (const auto& v : row["a"]["values"]) EXPECT_FALSE(only_b.count(v["text"])) << row.dump();
    for (const auto& v : row["b"]["values"]) EXPECT_FALSE(only_a.count(v["text"])) << row.dump();
  }
  EXPECT_GT(result["generated_tokens"].get<int>(), 0) << "the model wrote no prose";
  EXPECT_NE(table.find("## Differences\n\nThe most important change is that"), std::string::npos)
      << table;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The chromium binary from Debian, or "" when it is not installed.
std::string Chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Issue 54: `ellm compare A B --html FILE` writes a clause-by-clause redline
// that a person reads in a browser. The page is loaded in headless Chromium
// (from Debian; no network: file://, the page names no other resource),
// printed to PDF and read back with pdftotext, so what is checked is what
// the browser rendered; its screenshot stays in the test's output folder.
TEST(CompareReport, ClauseRedlineRendersInABrowser) {
  ELLM_REQUIRE_MODEL(model);
  const std::string chromium = Chromium();
  ELLM_REQUIRE_OR_SKIP_(!chromium.empty(), "chromium (scripts/bootstrap installs it)");
  const std::string dir = MakeTempDir("ellm-compare-report");
  // The hand-drafted services pair (tests/data/contracts/services): B
  // renumbers and rewords, moves the term up, writes the fee in words,
  // raises fee, payment days and liability cap, and adds exclusivity.
  const std::string pair = SourceDir() + "/tests/data/contracts/services/";
  fs::copy_file(pair + "a.pdf", dir + "/services-a.pdf");
  fs::copy_file(pair + "b.pdf", dir + "/services-b.pdf");
  std::string out;
  const int rc =
      RunCli("compare '" + dir + "/services-a.pdf' '" + dir + "/services-b.pdf' --model '" + model +
                 "' --db '" + dir + "/ellm.db' --ctx 2048 --threads 2 --json --html '" + dir +
                 "/report.html'",
             &out);
  ASSERT_EQ(rc, 0) << out;
  const size_t end = out.rfind("\n}\n");
  ASSERT_NE(end, std::string::npos) << out;
  const auto result = nlohmann::json::parse(out.substr(0, end + 2), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << out;
  // The clause table, computed: the reworded and moved term is not a
  // change, the values that differ are named, the added clause flagged.
  const std::string text = result["text"].get<std::string>();
  for (const char* row :
       {"| 4 Term (p. 1) | 2 Term of Agreement (p. 1) | reworded, moved | same values and "
        "obligations, other words |",
        "| 2 Fees (p. 1) | 3 Fees and Payment (p. 1) | changed | values: USD 20,000 -> USD "
        "21,000; 30 days -> 45 days |",
        "| - | 5 Exclusivity (p. 1) | added | only in B |",
        "| 6 Limitation of Liability (p. 1) | 7 Liability (p. 1) | changed | values: USD "
        "100,000 -> USD 150,000 |"}) {
    EXPECT_NE(text.find(row), std::string::npos) << row << "\n" << text;
  }
  const auto& clauses = result["json"]["clauses"];
  EXPECT_EQ(clauses["counts"]["changed"], 2) << clauses["counts"].dump();
  EXPECT_EQ(clauses["counts"]["added"], 1) << clauses["counts"].dump();
  EXPECT_EQ(clauses["counts"]["moved"], 1) << clauses["counts"].dump();
  EXPECT_EQ(clauses["parties"]["A"][0]["role"], "Provider");
  EXPECT_EQ(clauses["parties"]["B"][0]["name"], "Harbor Logistics Inc.");
  EXPECT_TRUE(clauses["parties"]["changed"].empty()) << clauses["parties"].dump();

  const std::string html = dir + "/report.html";
  ASSERT_TRUE(fs::exists(html));
  const std::string source = ReadFile(html);
  EXPECT_EQ(source.find("<script"), std::string::npos);
  EXPECT_EQ(source.find("http"), std::string::npos) << "the page loads nothing";
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
      "--user-data-dir='" +
      dir + "/chromium' ";
  const std::string pdf = dir + "/report.pdf", png = dir + "/report.png";
  ASSERT_EQ(std::system(("'" + chromium + "'" + flags + "--no-pdf-header-footer --print-to-pdf='" +
                         pdf + "' 'file://" + html + "' >/dev/null 2>&1")
                            .c_str()),
            0);
  ASSERT_EQ(std::system(("'" + chromium + "'" + flags + "--window-size=1280,1600 --screenshot='" +
                         png + "' 'file://" + html + "' >/dev/null 2>&1")
                            .c_str()),
            0);
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20000u) << "a blank page is a few kilobytes";
  std::cout << "screenshot: " << png << "\n";
  ASSERT_EQ(std::system(("pdftotext -layout '" + pdf + "' '" + dir + "/report.txt'").c_str()), 0);
  const std::string rendered = ReadFile(dir + "/report.txt");
  for (const char* shown : {"Comparison of services-a.pdf (A) and", "Provider, p. 1)",
                            "9 clauses in A, 10 in B:", "added", "reworded", "moved", "Exclusivity",
                            "values: USD 20,000 -> USD 21,000"}) {
    EXPECT_NE(rendered.find(shown), std::string::npos) << shown << "\n" << rendered;
  }
  // Deletions and insertions are marked in the page itself.
  EXPECT_NE(source.find("<del>USD 20,000</del>"), std::string::npos) << source;
  EXPECT_NE(source.find("<ins>"), std::string::npos);
  if (!::testing::Test::HasFailure()) {
    // Kept for a person to look at; the rest goes.
    const std::string keep = ::testing::TempDir() + "ellm-compare-report.png";
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
    std::cout << "screenshot kept: " << keep << "\n";
    fs::remove_all(dir);
  }
}

// f32: keys widened to f32 for the scores; pairs: bf16 pair products (the
// default on CPUs with AVX512_BF16, emulated elsewhere).
INSTANTIATE_TEST_SUITE_P(AttnScores, CompareCli, ::testing::Values("f32", "pairs"));

// Issue 54: a base and its amendments, no model: each version compared with
// the next, and each clause's history through them (JSON and Markdown).
TEST(CompareChain, ABaseAndTwoAmendmentsGiveEachClausesHistory) {
  const std::string dir = MakeTempDir("ellm-compare-chain");
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string v2 = read(SourceDir() + "/tests/data/contracts/services/b.txt");
  std::string v3 = v2;
  v3.replace(v3.find("60 days'"), 8, "90 days'");
  std::ofstream(dir + "/v1.txt") << read(SourceDir() + "/tests/data/contracts/services/a.txt");
  std::ofstream(dir + "/v2.txt") << v2;
  std::ofstream(dir + "/v3.txt") << v3;
  std::string out;
  ASSERT_EQ(RunCli("compare '" + dir + "/v1.txt' '" + dir + "/v2.txt' '" + dir +
                       "/v3.txt' --no-model --json",
                   &out),
            0)
      << out;
  // The timing line (stderr, merged by RunCli) follows the whole report.
  const size_t end = out.rfind("\n}\n");
  ASSERT_NE(end, std::string::npos) << out;
  const nlohmann::json j = nlohmann::json::parse(out.substr(0, end + 2), nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["documents"]["A"], "v2.txt");
  bool termination = false;
  for (const auto& h : j["history"]) {
    if (h["label"].get<std::string>().find("Termination") == std::string::npos) continue;
    termination = true;
    EXPECT_EQ(h["changes"][1], "changed") << h.dump();  // 60 -> 90 days in the second step
  }
  EXPECT_TRUE(termination) << j["history"].dump(1);
  ASSERT_EQ(
      RunCli("compare '" + dir + "/v1.txt' '" + dir + "/v2.txt' '" + dir + "/v3.txt' --no-model",
             &out),
      0);
  EXPECT_NE(
      out.find("# Clause history\n\n| Clause | v1.txt \u2192 v2.txt | v2.txt \u2192 v3.txt |"),
      std::string::npos)
      << out;
  EXPECT_NE(RunCli("compare '" + dir + "/v1.txt' '" + dir + "/v2.txt' '" + dir +
                       "/v3.txt' --no-model --html '" + dir + "/r.html'",
                   &out),
            0);
  EXPECT_NE(out.find("--html shows one comparison"), std::string::npos) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
