// `ellm compare` on the two sample contracts (the ones the end-to-end test
// sends through the daemon), with each way a bf16 KV cache can compute its
// attention scores: every field's answer is its own. Regression: with the
// bf16 pair scores, contract A's buyer answer ran on into the supplier
// ("Northwind Energy plc (the Buyer) and the name of the Supplier is ...")
// and the supplier question asked after it answered "the Buyer" (cell "—").
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

class CompareCli : public ::testing::TestWithParam<const char*> {};

TEST_P(CompareCli, ContractFieldsAreTheirOwnWithEitherAttentionScores) {
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
        "| Total price | EUR 96 million (A p.1) | EUR 118 million (B p.1) | different |",
        "| Termination notice | 30 days (A p.2) | 90 days (B p.2) | different |",
        "| Governing law | Spain (A p.2) | England and Wales (B p.2) | different |"}) {
    EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
  }
  // No answer speaks of the other party: each is cut where it would.
  for (const auto& row : result["json"]["comparison"]) {
    for (const char* side : {"a", "b"}) {
      const std::string answer = row[side]["answer"].get<std::string>();
      const std::string other = row["field"] == "buyer"      ? "Supplier"
                                : row["field"] == "supplier" ? "Buyer"
                                                             : "";
      if (!other.empty()) {
        EXPECT_EQ(answer.find(other), std::string::npos) << row.dump();
      }
    }
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// f32: keys widened to f32 for the scores; pairs: bf16 pair products (the
// default on CPUs with AVX512_BF16, emulated elsewhere).
INSTANTIATE_TEST_SUITE_P(AttnScores, CompareCli, ::testing::Values("f32", "pairs"));

}  // namespace
}  // namespace ellm::testing
