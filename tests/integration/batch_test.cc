// `ellm batch`: a manifest runs in order, each item becomes a job in the
// store, and a rerun skips what already finished.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ellm/store/database.h"
#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

int64_t Count(const std::string& db, const std::string& sql) {
  store::DatabaseOptions o;
  o.read_only = true;
  auto d = store::Database::Open(db, o);
  if (!d.ok()) return -1;
  auto n = (*d)->QueryInt(sql);
  return n.ok() ? *n : -1;
}

TEST(Batch, RunsAManifestInOrderAndResumesWithoutRedoingWork) {
  ELLM_REQUIRE_MODEL(model);
  std::string dir = MakeTempDir("ellm-batch");
  const std::string samples = SourceDir() + "/configs/samples/";
  for (const char* f : {"northwind-annual-report-2025.pdf", "contract-a.pdf", "contract-b.pdf"}) {
    fs::copy_file(samples + f, dir + "/" + f);
  }
  std::ofstream(dir + "/nightly.yaml") << R"(id: nightly-test
pipeline: compare-contracts
items:
  - id: supply
    documents: [contract-a.pdf, contract-b.pdf]
  - id: annual
    pipeline: summarize-report
    documents: [northwind-annual-report-2025.pdf]
  - id: missing
    documents: [contract-a.pdf, gone.pdf]
  - id: terms
    pipeline: extract-key-terms
    documents: [contract-b.pdf]
)";
  std::string db = dir + "/ellm.db";
  std::string args = "batch '" + dir + "/nightly.yaml' --model '" + model + "' --db '" + db +
                     "' --pipelines '" + SourceDir() + "/pipelines/defs'";
  std::string first;
  EXPECT_EQ(RunCli(args, &first), 1) << first;  // one item failed
  EXPECT_NE(first.find("batch:nightly-test:supply"), std::string::npos) << first;
  EXPECT_EQ(Count(db, "SELECT count(*) FROM jobs WHERE status='succeeded'"), 3) << first;
  // The extraction carries each value with the page and words that state it.
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM results WHERE job_id='batch:nightly-test:terms' "
                  "AND json_extract(output_json, '$.fields.governing_law.source') = "
                  "'England and Wales' "
                  "AND json_extract(output_json, '$.fields.governing_law.page') = 2 "
                  "AND json_extract(output_json, '$.fields.price.normalized') = 'EUR 118000000' "
                  "AND json_extract(output_json, '$.fields.supplier.verified') = 1"),
            1)
      << first;
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM jobs WHERE status='failed' AND "
                  "id='batch:nightly-test:missing' AND error_code='document_not_found'"),
            1);
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM results WHERE job_id='batch:nightly-test:annual' "
                  "AND output_text LIKE '%4.2 billion%'"),
            1)
      << first;

  std::string second;
  EXPECT_EQ(RunCli(args, &second), 1) << second;
  EXPECT_NE(second.find("0 run, 4 already done"), std::string::npos) << second;
  EXPECT_EQ(Count(db, "SELECT count(*) FROM results"), 3);
  EXPECT_EQ(Count(db, "SELECT max(attempts) FROM jobs"), 1);

  // A CSV manifest of the same shape works too; bad manifests are clear errors.
  std::ofstream(dir + "/pairs.csv")
      << "id,pipeline,documents\nsupply,,contract-a.pdf,contract-b.pdf\n";
  std::string csv;
  EXPECT_EQ(RunCli("batch '" + dir + "/pairs.csv' --model '" + model + "' --db '" + db +
                       "' --pipelines '" + SourceDir() + "/pipelines/defs'",
                   &csv),
            0)
      << csv;
  EXPECT_EQ(Count(db,
                  "SELECT count(*) FROM jobs WHERE id='batch:pairs:supply' AND "
                  "status='succeeded'"),
            1);
  std::ofstream(dir + "/bad.yaml") << "items:\n  - id: x\n";
  std::string bad;
  EXPECT_EQ(RunCli("batch '" + dir + "/bad.yaml' --model '" + model + "' --db '" + db + "'", &bad),
            2);
  EXPECT_NE(bad.find("bad.yaml:2"), std::string::npos) << bad;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
