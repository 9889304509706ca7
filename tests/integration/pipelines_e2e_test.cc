// The product end to end: report and contract PDFs dropped on the jobs topic
// become summaries in SQLite and events on the results topic, through a real
// ellmd, the real broker, the real model and the shipped pipelines.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "daemon_harness.h"
#include "ellm/ingest/kafka.h"
#include "ellm/store/job_store.h"
#include "http_get.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using std::chrono::seconds;
namespace fs = std::filesystem;

std::string Job(const std::string& id, const std::string& pipeline,
                const std::vector<std::string>& paths) {
  nlohmann::json docs = nlohmann::json::array();
  for (const auto& p : paths) docs.push_back({{"path", p}});
  return nlohmann::json{{"id", id}, {"pipeline", pipeline}, {"documents", docs}}.dump();
}

TEST(PipelinesEndToEnd, ReportsAndContractsBecomeResultsAndABrokenPdfFails) {
  ELLM_REQUIRE_KAFKA(brokers);
  ELLM_REQUIRE_MODEL(model);
  std::string dir = MakeTempDir("ellm-e2e");
  std::string inbox = dir + "/inbox";
  fs::create_directories(inbox);
  const std::string samples = SourceDir() + "/configs/samples/";
  for (const char* f : {"northwind-annual-report-2025.pdf", "northwind-annual-report-2025-long.pdf",
                        "contract-a.pdf", "contract-b.pdf"}) {
    fs::copy_file(samples + f, inbox + "/" + f);
  }
  fs::copy_file(SourceDir() + "/tests/data/pdf/truncated.pdf", inbox + "/broken.pdf");

  DaemonConfig c = DaemonOn(brokers, model, UniqueName("ellm-e2e"), dir, inbox, "e2e");
  // Small enough that the 14-page report must go through map-reduce, large
  // enough for the short report and both contracts in one pass.
  c.context = 1536;
  // model.attn_scores is the default (bf16 pair scores on AVX512_BF16
  // CPUs), under which contract A's buyer answer runs on into the supplier:
  // each field is asked on its own and cut where it names another
  // (compare_cli_test runs the contracts with both kinds of scores).
  c.metrics = true;
  ASSERT_TRUE(CreateTopic(brokers, c.topic, 1));
  {
    ingest::KafkaOptions o;
    o.brokers = brokers;
    auto p = ingest::KafkaProducer::Create(o);
    ASSERT_TRUE(p.ok());
    auto produce = [&](const std::string& id, const std::string& payload) {
      Status s = (*p)->Produce(c.topic, id, payload);
      ASSERT_TRUE(s.ok()) << s.ToString();
    };
    // The report goes through `ellm submit`, as a person would send it.
    std::string submit = std::string(ELLM_CLI_PATH) + " submit '" + inbox +
                         "/northwind-annual-report-2025.pdf' --id report --brokers " + brokers +
                         " --topic " + c.topic + " > '" + dir + "/submit.out' 2>&1";
    ASSERT_EQ(std::system(submit.c_str()), 0);
    produce("broken", Job("broken", "summarize-report", {inbox + "/broken.pdf"}));
    produce("contracts", Job("contracts", "compare-contracts",
                             {inbox + "/contract-a.pdf", inbox + "/contract-b.pdf"}));
    produce("long",
            Job("long", "summarize-report", {inbox + "/northwind-annual-report-2025-long.pdf"}));
  }
  auto daemon = Daemon::Start(c, dir);
  auto finished = [&] {
    return CountIn(c.store_path,
                   "SELECT count(*) FROM jobs WHERE status IN ('succeeded','failed')");
  };
  auto published = [&] {
    return CountIn(c.store_path, "SELECT count(*) FROM events WHERE kind='published'");
  };
  ASSERT_TRUE(WaitFor([&] { return finished() == 4 && published() == 4; }, seconds(600)))
      << daemon->Log();
  // The metrics endpoint counts what happened.
  int port = daemon->MetricsPort();
  ASSERT_GT(port, 0) << daemon->Log();
  HttpResponse metrics = HttpRequest(port, "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(
      metrics.body.find(R"(ellm_jobs_total{pipeline="summarize-report",status="succeeded"} 2)"),
      std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(R"(ellm_jobs_total{pipeline="summarize-report",status="failed"} 1)"),
            std::string::npos)
      << metrics.body;
  EXPECT_EQ(HttpRequest(port, "GET", "/readyz").status, 200);
  size_t kv = metrics.body.find("ellm_kv_bytes{state=\"resident\"} ");
  ASSERT_NE(kv, std::string::npos) << metrics.body;
  EXPECT_GT(std::atof(metrics.body.c_str() + kv + 32), 0.0) << metrics.body.substr(kv, 60);
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(60)), 0);

  store::JobStoreOptions ro;
  ro.database.read_only = true;
  auto st = store::JobStore::Open(c.store_path, ro);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  auto get = [&](const std::string& id) {
    auto j = (*st)->Get(id);
    EXPECT_TRUE(j.ok() && j->has_value()) << id;
    return j.ok() && j->has_value() ? **j : store::JobRecord{};
  };

  store::JobRecord report = get("report");
  ASSERT_EQ(report.status, store::JobStatus::kSucceeded) << report.error_message;
  ASSERT_TRUE(report.result.has_value());
  EXPECT_EQ(report.result->strategy, "single-pass");
  EXPECT_EQ(report.result->pipeline_name, "summarize-report");
  EXPECT_NE(report.result->output_text.find("## Key figures"), std::string::npos);
  // The report's real headline figures (page 2) reach the summary.
  EXPECT_NE(report.result->output_text.find("4.2 billion"), std::string::npos)
      << report.result->output_text;
  EXPECT_NE(report.result->output_text.find("610 million"), std::string::npos)
      << report.result->output_text;
  EXPECT_GT(report.result->prompt_tokens, 200);
  EXPECT_GT(report.result->generated_tokens, 10);
  ASSERT_EQ(report.documents.size(), 1u);
  EXPECT_EQ(report.documents[0].page_count, 4);
  EXPECT_EQ(report.documents[0].sha256.size(), 64u);
  EXPECT_GT(report.documents[0].token_count, 200);

  store::JobRecord contracts = get("contracts");
  ASSERT_EQ(contracts.status, store::JobStatus::kSucceeded) << contracts.error_message;
  EXPECT_EQ(contracts.documents.size(), 2u);
  // The comparison is computed from each contract read on its own: every
  // cell cites its side and page, and the values are the contracts' own
  // words (contract-a.pdf: 30 days, EUR 96 million, Spain; B: 90 days,
  // EUR 118 million, England and Wales).
  const std::string& table = contracts.result->output_text;
  EXPECT_NE(table.find("| Termination notice | 30 days (A p.2) | 90 days (B p.2) | different |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| Amounts payable | EUR 96 million (A p.1) | EUR 118 million (B p.1) | "
                       "different |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| Governing law | Spain (A p.2) | England and Wales (B p.2) | different |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| Supplier | Aero Turbines SA (A p.1) | Aero Turbines SA (B p.1) | same |"),
            std::string::npos)
      << table;
  ASSERT_TRUE(contracts.result->output_json.has_value());
  auto comparison = nlohmann::json::parse(*contracts.result->output_json);
  ASSERT_TRUE(comparison["comparison"].is_array()) << comparison.dump();
  // Whatever the model answered, no value of one contract is shown as the
  // other's: each side's cells come from its own document.
  const std::set<std::string> only_a = {"30 days", "EUR 96 million", "Spain", "30 June 2026", "12"};
  const std::set<std::string> only_b = {"90 days", "EUR 118 million", "England and Wales",
                                        "31 December 2026", "14"};
  for (const auto& row : comparison["comparison"]) {
    for (const char* side : {"a", "b"}) {
      const auto& cell = row[side];
      if (cell["verified"] != true) continue;
      EXPECT_TRUE(cell["page"].is_number()) << row.dump();
      const std::string source = cell["source"].get<std::string>();
      EXPECT_FALSE((side[0] == 'a' ? only_b : only_a).count(source)) << row.dump();
    }
  }
  // Figures in the report summary are found on their pages.
  ASSERT_TRUE(report.result->output_json.has_value());
  auto faith = nlohmann::json::parse(*report.result->output_json);
  EXPECT_GT(faith["faithfulness"]["figures_found"].get<int>(), 0) << faith.dump();
  EXPECT_NE(report.result->output_text.find("4.2 billion [p. 2]"), std::string::npos)
      << report.result->output_text;

  store::JobRecord long_report = get("long");
  ASSERT_EQ(long_report.status, store::JobStatus::kSucceeded) << long_report.error_message;
  EXPECT_EQ(long_report.result->strategy.rfind("map-reduce", 0), 0u)
      << long_report.result->strategy;
  EXPECT_GT(long_report.documents[0].token_count, c.context / 2);
  // Mapped section by section, its figures still cite the report's pages.
  EXPECT_NE(long_report.result->strategy.find("section-wise"), std::string::npos);
  EXPECT_NE(long_report.result->output_text.find(" [p. "), std::string::npos)
      << long_report.result->output_text;

  store::JobRecord broken = get("broken");
  EXPECT_EQ(broken.status, store::JobStatus::kFailed);
  EXPECT_EQ(broken.error_code, "document.damaged") << broken.error_message;
  EXPECT_NE(broken.error_message.find("broken.pdf"), std::string::npos) << broken.error_message;

  auto events = ReadTopic(brokers, c.results_topic, seconds(3));
  EXPECT_EQ(events.size(), 4u);
  auto dead = ReadTopic(brokers, c.dead_letter_topic, seconds(3));
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].key, "broken");
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
