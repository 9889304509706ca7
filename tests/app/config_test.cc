#include "ellm/app/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ellm/engine/cpu_features.h"
#include "ellm/ingest/kafka.h"

#include "test_env.h"

namespace ellm::app {
namespace {

TEST(Config, ShippedDefaultFileIsValid) {
  auto c = LoadConfig(ellm::testing::SourceDir() + "/configs/ellm.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kafka.jobs_topic, "ellm.jobs");
  EXPECT_EQ(c->log.level, "info");
}

// Regression: configs/local.yaml left kv.prefix_cache_dir at
// /var/lib/ellm/prefix-cache, outside the source tree it is made for.
TEST(Config, TheLocalFileKeepsEveryPathInTheRepository) {
  auto c = LoadConfig(ellm::testing::SourceDir() + "/configs/local.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const std::string& path :
       {c->model.path, c->store.path, c->kv.prefix_cache_dir, c->model.session.spill_dir}) {
    EXPECT_FALSE(path.empty());
    EXPECT_NE(path[0], '/') << path;
  }
}

// Regression: a value refused by Validate() after parsing was reported as
// "config v.yaml: kafka.session_timeout_ms < 1000", without the line.
TEST(Config, AValueRefusedAfterParsingNamesItsLine) {
  auto flow = ParseConfig("kafka: {session_timeout_ms: 10}\n", "v.yaml");
  ASSERT_FALSE(flow.ok());
  EXPECT_EQ(flow.status().message(), "config v.yaml:1: kafka.session_timeout_ms < 1000");
  auto block =
      ParseConfig("store:\n  path: a.db\nkafka:\n  group_id: g\n  brokers: \"\"\n", "v.yaml");
  ASSERT_FALSE(block.ok());
  EXPECT_EQ(block.status().message(), "config v.yaml:5: kafka.brokers is empty");
  auto level = ParseConfig("\nlog:\n  level: loud\n", "v.yaml");
  ASSERT_FALSE(level.ok());
  EXPECT_EQ(level.status().message().rfind("config v.yaml:3: log.level 'loud'", 0), 0u)
      << level.status().message();
  // A check of two settings gives the line of the first it names.
  auto poll =
      ParseConfig("kafka:\n  max_poll_interval_ms: 2000\n  session_timeout_ms: 3000\n", "v.yaml");
  ASSERT_FALSE(poll.ok());
  EXPECT_EQ(poll.status().message().rfind("config v.yaml:2: kafka.max_poll_interval_ms", 0), 0u)
      << poll.status().message();
}

TEST(Config, EmptyFileMeansDefaults) {
  auto c = ParseConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->store.path, "/var/lib/ellm/ellm.db");
}

TEST(Config, RejectsUnknownKeysWrongTypesAndBadValues) {
  auto unknown = ParseConfig("model:\n  pth: x\n", "c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("c.yaml:2"), std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("model.pth"), std::string::npos);
  auto type = ParseConfig("model:\n  threads: many\n", "c.yaml");
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("model.threads"), std::string::npos);
  auto level = ParseConfig("log:\n  level: loud\n", "c.yaml");
  ASSERT_FALSE(level.ok());
  EXPECT_NE(level.status().message().find("loud"), std::string::npos);
  EXPECT_FALSE(ParseConfig("kafka:\n  jobs_topic: a\n  dead_letter_topic: a\n", "c").ok());
  EXPECT_FALSE(LoadConfig("/nonexistent.yaml").ok());
}

TEST(Config, ReadsKafkaTuningPassThroughPropertiesAndJobLimits) {
  auto c = ParseConfig(R"(
model: {context: 4096, kv_type: f32}
pipelines: {dir: /opt/pipelines}
kafka:
  group_instance_id: node-1
  session_timeout_ms: 6000
  max_poll_interval_ms: 60000
  shutdown_grace_s: 5
  properties: {security.protocol: SASL_SSL, sasl.mechanisms: PLAIN}
jobs: {allowed_roots: [/srv/in, /data], max_inline_bytes: 1024, max_attempts: 2}
)",
                       "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model.session.n_ctx, 4096);
  EXPECT_EQ(c->model.session.kv_type, KvType::kF32);
  EXPECT_EQ(c->pipelines.dir, "/opt/pipelines");
  EXPECT_EQ(c->kafka.group_instance_id, "node-1");
  EXPECT_EQ(c->kafka.properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(c->jobs.allowed_roots.size(), 2u);
  EXPECT_EQ(c->jobs.max_attempts, 2);

  // Keys ellm manages itself cannot be overridden through properties.
  auto owned = ParseConfig("kafka:\n  properties: {group.id: x}\n", "c.yaml");
  ASSERT_FALSE(owned.ok());
  EXPECT_NE(owned.status().message().find("group.id"), std::string::npos);
  // Transactions are on unless turned off; their id is derived, not set.
  EXPECT_TRUE(ParseConfig("", "c")->kafka.transactions);
  EXPECT_FALSE(ParseConfig("kafka: {transactions: false}\n", "c")->kafka.transactions);
  EXPECT_TRUE(ParseConfig("", "c")->kafka.reply_topics.empty());
  EXPECT_EQ(ParseConfig("kafka: {reply_topics: [team-*, audit]}\n", "c")->kafka.reply_topics,
            (std::vector<std::string>{"team-*", "audit"}));
  auto txn_id = ParseConfig("kafka:\n  properties: {transactional.id: x}\n", "c.yaml");
  ASSERT_FALSE(txn_id.ok());
  EXPECT_NE(txn_id.status().message().find("transactional.id"), std::string::npos);
  EXPECT_FALSE(ParseConfig("jobs: {allowed_roots: [relative/dir]}\n", "c").ok());
  EXPECT_FALSE(ParseConfig("jobs: {max_attempts: 0}\n", "c").ok());
  EXPECT_EQ(ParseConfig("", "c")->jobs.max_publish_attempts, 5);
  EXPECT_EQ(ParseConfig("jobs: {max_publish_attempts: 9}\n", "c")->jobs.max_publish_attempts, 9);
  EXPECT_FALSE(ParseConfig("jobs: {max_publish_attempts: 0}\n", "c").ok());
  EXPECT_EQ(ParseConfig("", "c")->jobs.timeout_s, 0);
  EXPECT_EQ(ParseConfig("jobs: {timeout_s: 3600}\n", "c")->jobs.timeout_s, 3600);
  auto negative = ParseConfig("jobs: {timeout_s: -1}\n", "c");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("jobs.timeout_s"), std::string::npos);
  EXPECT_FALSE(
      ParseConfig("kafka: {session_timeout_ms: 9000, max_poll_interval_ms: 8000}\n", "c").ok());
  EXPECT_FALSE(ParseConfig("model: {kv_type: q4}\n", "c").ok());
  // bf16 attention weights: a known value, and only with the bf16 cache.
  EXPECT_FALSE(ParseConfig("model: {kv_type: bf16, attn_weights: f16}\n", "c").ok());
  auto mixed = ParseConfig("model: {kv_type: f16, attn_weights: bf16}\n", "c");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("kv_type bf16"), std::string::npos);
  auto bf16 = ParseConfig("model: {kv_type: bf16, attn_weights: bf16}\n", "c");
  ASSERT_TRUE(bf16.ok()) << bf16.status().ToString();
  EXPECT_TRUE(bf16->model.session.bf16_attention_weights);
  // A bf16 cache's scores: auto by default, or named; anything else refused.
  EXPECT_EQ(ParseConfig("", "c")->model.session.attn_scores, AttnScores::kAuto);
  EXPECT_EQ(ParseConfig("model: {attn_scores: pairs}\n", "c")->model.session.attn_scores,
            AttnScores::kPairs);
  EXPECT_EQ(ParseConfig("model: {attn_scores: f32}\n", "c")->model.session.attn_scores,
            AttnScores::kF32);
  // Tiles need AMX-BF16: accepted where the CPU has it, refused elsewhere
  // with a message that says so.
  auto tiles = ParseConfig("model: {attn_scores: tiles}\n", "c");
  if (HostCpu().Level() >= IsaLevel::kAmx && HostCpu().amx_bf16) {
    ASSERT_TRUE(tiles.ok()) << tiles.status().ToString();
    EXPECT_EQ(tiles->model.session.attn_scores, AttnScores::kTiles);
  } else {
    ASSERT_FALSE(tiles.ok());
    EXPECT_NE(tiles.status().message().find("AMX-BF16"), std::string::npos)
        << tiles.status().ToString();
  }
  auto scores = ParseConfig("model: {attn_scores: fast}\n", "c");
  ASSERT_FALSE(scores.ok());
  EXPECT_NE(scores.status().message().find("model.attn_scores"), std::string::npos);
  // Sparse attention: off by default, non-negative settings.
  auto none = ParseConfig("", "c");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->model.session.sparse_attention.top_k_blocks, 0);
  EXPECT_FALSE(ParseConfig("model: {sparse_top_k: -1}\n", "c").ok());
  EXPECT_FALSE(ParseConfig("model: {sparse_local: -5}\n", "c").ok());
  auto sparse = ParseConfig("model: {sparse_top_k: 48, sparse_sink: 128}\n", "c");
  ASSERT_TRUE(sparse.ok()) << sparse.status().ToString();
  EXPECT_EQ(sparse->model.session.sparse_attention.top_k_blocks, 48);
  EXPECT_EQ(sparse->model.session.sparse_attention.sink_tokens, 128);
  EXPECT_EQ(sparse->model.session.sparse_attention.local_tokens, 1024);
}

TEST(Config, ReadsAndValidatesMetricsKeys) {
  auto defaults = ParseConfig("", "c.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->metrics.enabled);
  EXPECT_EQ(defaults->metrics.listen, "127.0.0.1:9464");

  auto c = ParseConfig("metrics: {enabled: true, listen: \"0.0.0.0:9100\"}\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->metrics.enabled);
  EXPECT_EQ(c->metrics.listen, "0.0.0.0:9100");
  EXPECT_TRUE(ParseConfig("metrics: {listen: \"localhost:65535\"}\n", "c").ok());

  for (const char* bad : {"9464", ":9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:94a",
                          "127.0.0.1:9464s", "a:1,b:2", "[::1]:9464", "host name:1"}) {
    auto r = ParseConfig(std::string("metrics: {listen: \"") + bad + "\"}\n", "c.yaml");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("metrics.listen"), std::string::npos)
        << r.status().message();
  }
  auto unknown = ParseConfig("metrics:\n  port: 9464\n", "c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("metrics.port"), std::string::npos);
  EXPECT_FALSE(ParseConfig("metrics: {enabled: maybe}\n", "c").ok());
}

// Issue 37 item 8: the extractor's limits come from the config file.
TEST(Config, ReadsAndValidatesTheExtractSection) {
  auto defaults = ParseConfig("", "c.yaml");
  ASSERT_TRUE(defaults.ok());
  const ingest::ExtractOptions built_in;
  EXPECT_EQ(defaults->extract.max_pages, built_in.max_pages);
  EXPECT_EQ(defaults->extract.max_bytes, built_in.max_bytes);
  EXPECT_EQ(defaults->extract.wall_timeout, built_in.wall_timeout);
  EXPECT_EQ(defaults->extract.cpu_seconds, built_in.cpu_seconds);
  EXPECT_EQ(defaults->extract.address_space_bytes, built_in.address_space_bytes);

  auto c = ParseConfig(
      "extract:\n  max_pages: 50\n  max_bytes: 1000000\n  timeout_s: 30\n  memory_mib: 512\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->extract.max_pages, 50);
  EXPECT_EQ(c->extract.max_bytes, 1000000);
  EXPECT_EQ(c->extract.wall_timeout, std::chrono::seconds(30));
  EXPECT_EQ(c->extract.cpu_seconds, 20);
  EXPECT_EQ(c->extract.address_space_bytes, int64_t{512} << 20);

  auto pages = ParseConfig("extract:\n  max_pages: 0\n", "c.yaml");
  ASSERT_FALSE(pages.ok());
  EXPECT_EQ(pages.status().message(), "config c.yaml:2: extract.max_pages must be positive");
  auto timeout = ParseConfig("extract: {timeout_s: 1}\n", "c.yaml");
  ASSERT_FALSE(timeout.ok());
  EXPECT_EQ(timeout.status().message(), "config c.yaml:1: extract.timeout_s must be in [2, 86400]");
  auto memory = ParseConfig("extract:\n  memory_mib: -5\n", "c.yaml");
  ASSERT_FALSE(memory.ok());
  EXPECT_NE(memory.status().message().find("extract.memory_mib"), std::string::npos);
  auto unknown = ParseConfig("extract:\n  cpu_seconds: 5\n", "c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'extract.cpu_seconds'"),
            std::string::npos);
  EXPECT_FALSE(ParseConfig("extract: {max_bytes: lots}\n", "c").ok());
}

// Issue 58: OCR of scanned pages is configured in the extract section.
TEST(Config, ReadsAndValidatesTheOcrSettings) {
  auto defaults = ParseConfig("", "c.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->extract.ocr, ingest::OcrMode::kAuto);
  EXPECT_EQ(defaults->extract.ocr_languages, "eng");
  EXPECT_EQ(defaults->extract.ocr_dpi, 300);
  auto c = ParseConfig(
      "extract:\n  ocr: force\n  ocr_languages: eng+deu\n  ocr_dpi: 200\n  ocr_page_s: 15\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->extract.ocr, ingest::OcrMode::kForce);
  EXPECT_EQ(c->extract.ocr_languages, "eng+deu");
  EXPECT_EQ(c->extract.ocr_dpi, 200);
  EXPECT_EQ(c->extract.ocr_page_seconds, 15);
  auto mode = ParseConfig("extract:\n  ocr: sometimes\n", "c.yaml");
  ASSERT_FALSE(mode.ok());
  EXPECT_EQ(mode.status().message(),
            "config c.yaml:2: extract.ocr: 'sometimes': expected auto, off or force");
  auto dpi = ParseConfig("extract:\n  ocr_dpi: 20\n", "c.yaml");
  ASSERT_FALSE(dpi.ok());
  EXPECT_EQ(dpi.status().message(), "config c.yaml:2: extract.ocr_dpi must be between 50 and 1200");
  auto lang = ParseConfig("extract:\n  ocr_languages: \"../../etc\"\n", "c.yaml");
  ASSERT_FALSE(lang.ok());
  EXPECT_NE(lang.status().message().find("extract.ocr_languages"), std::string::npos);
}

}  // namespace
}  // namespace ellm::app

namespace ellm::app {
namespace {

TEST(Config, ReadsAndValidatesTheHttpSection) {
  auto defaults = ParseConfig("", "c.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->http.enabled);
  EXPECT_EQ(defaults->http.server.host, "127.0.0.1");
  EXPECT_EQ(defaults->http.server.port, 8080);

  auto c = ParseConfig(
      "http: {enabled: true, listen: \"0.0.0.0:9000\", api_keys_file: /etc/ellm/keys,\n"
      "  sessions: 2, max_queue: 4, context: 2048, max_body_bytes: 4096,\n"
      "  cors_origins: [\"https://a.example\"], tls_cert_file: c.pem, tls_key_file: k.pem}\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->http.enabled);
  EXPECT_EQ(c->http.server.host, "0.0.0.0");
  EXPECT_EQ(c->http.server.port, 9000);
  EXPECT_EQ(c->http.api_keys_file, "/etc/ellm/keys");
  EXPECT_EQ(c->http.server.sessions, 2);
  EXPECT_EQ(c->http.server.max_queue, 4);
  EXPECT_EQ(c->http.server.n_ctx, 2048);
  EXPECT_EQ(c->http.server.max_body_bytes, 4096u);
  EXPECT_EQ(c->http.server.cors_origins, std::vector<std::string>{"https://a.example"});

  for (const char* bad : {"http: {listen: \"8080\"}", "http: {listen: \"h:99999\"}",
                          "http: {listen: \"0.0.0.0:8080\"}",  // no keys off loopback
                          "http: {sessions: 0}", "http: {max_queue: -1}",
                          "http: {tls_cert_file: c.pem}", "http: {port: 1}"}) {
    auto r = ParseConfig(std::string(bad) + "\n", "c.yaml");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("http"), std::string::npos) << r.status().message();
  }
}

TEST(Config, ReadsKvAndNumaSettingsAndRejectsBadOnes) {
  auto c = ParseConfig(
      "model: {kv_type: q8_0, numa: distribute, mlock: true}\n"
      "kv: {memory_budget: 512, spill_dir: /tmp/spill, prefix_cache_dir: /tmp/pc}\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model.session.kv_type, KvType::kQ8_0);
  EXPECT_EQ(c->model.engine.numa, NumaMode::kDistribute);
  EXPECT_TRUE(c->model.engine.mlock);
  EXPECT_EQ(c->model.session.kv_memory_budget, uint64_t{512} << 20);
  EXPECT_EQ(c->model.session.spill_dir, "/tmp/spill");
  EXPECT_EQ(c->kv.prefix_cache_dir, "/tmp/pc");
  EXPECT_FALSE(c->model.session.kv_spill_map);
  auto mapped = ParseConfig("kv: {memory_budget: 64, spill_dir: /tmp, spill_read: map}\n", "c");
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_TRUE(mapped->model.session.kv_spill_map);
  auto sideways = ParseConfig("kv: {spill_read: sideways}\n", "c");
  ASSERT_FALSE(sideways.ok());
  EXPECT_NE(sideways.status().message().find("kv.spill_read must be copy or map"),
            std::string::npos)
      << sideways.status().ToString();
  // Mapped reads need raw blocks.
  EXPECT_FALSE(
      ParseConfig(
          "kv: {memory_budget: 64, spill_dir: /tmp, spill_read: map, spill_zstd_level: 3}\n", "c")
          .ok());
  EXPECT_FALSE(ParseConfig("model: {numa: sideways}\n", "c").ok());
  EXPECT_TRUE(ParseConfig("model: {numa: replicate}\n", "c").ok());
  EXPECT_FALSE(ParseConfig("kv: {memory_budget: -1}\n", "c").ok());
  EXPECT_FALSE(ParseConfig("kv: {memory_budget: 64, spill_dir: \"\"}\n", "c").ok());
  auto unknown = ParseConfig("kv:\n  budget: 5\n", "c.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("c.yaml:2"), std::string::npos)
      << unknown.status().ToString();
}

}  // namespace
}  // namespace ellm::app

namespace ellm::app {
namespace {

// Secrets stay out of the config file and out of every error message.
TEST(Config, KafkaSecretsComeFromFilesOrCredentialsAndAreNeverEchoed) {
  const std::string dir = ellm::testing::MakeTempDir("ellm-secrets");
  {
    std::ofstream(dir + "/password") << "s3cret-pw\n";
    std::ofstream(dir + "/token") << "cred-token";
  }
  setenv("CREDENTIALS_DIRECTORY", dir.c_str(), 1);
  auto c = ParseConfig("kafka:\n  properties:\n    sasl.password: {file: " + dir +
                           "/password}\n    sasl.oauthbearer.config: {credential: token}\n",
                       "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kafka.properties.at("sasl.password"), "s3cret-pw");  // newline dropped
  EXPECT_EQ(c->kafka.properties.at("sasl.oauthbearer.config"), "cred-token");

  auto missing =
      ParseConfig("kafka: {properties: {sasl.password: {file: /nonexistent/pw}}}\n", "c.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/pw"), std::string::npos);
  EXPECT_NE(missing.status().message().find("c.yaml:1"), std::string::npos);
  EXPECT_FALSE(ParseConfig("kafka: {properties: {a: {path: x}}}\n", "c").ok());
  unsetenv("CREDENTIALS_DIRECTORY");
  EXPECT_FALSE(ParseConfig("kafka: {properties: {a: {credential: token}}}\n", "c").ok());

  // A value librdkafka refuses is named by its key, never shown.
  ingest::KafkaOptions o;
  o.brokers = "127.0.0.1:1";
  o.properties["security.protocol"] = "hunter2-secret";
  auto producer = ingest::KafkaProducer::Create(o);
  ASSERT_FALSE(producer.ok());
  EXPECT_NE(producer.status().message().find("security.protocol"), std::string::npos);
  EXPECT_EQ(producer.status().ToString().find("hunter2-secret"), std::string::npos)
      << producer.status().ToString();
  std::filesystem::remove_all(dir);
}

// The shipped unit's restart limit against the default jobs.max_attempts:
// two jobs whose documents crash the process (each up to max_attempts
// starts that die, issue 37 item 4) plus the start that fails them and a
// spare must fit in StartLimitBurst, or systemd leaves ellmd.service failed.
TEST(ServiceUnit, TwoCrashingJobsDoNotExhaustTheRestartLimit) {
  std::ifstream unit(std::string(ELLM_SOURCE_DIR) + "/packaging/systemd/ellmd.service");
  ASSERT_TRUE(unit.good());
  int burst = -1, interval = -1;
  std::string line;
  while (std::getline(unit, line)) {
    if (line.rfind("StartLimitBurst=", 0) == 0) burst = std::stoi(line.substr(16));
    if (line.rfind("StartLimitIntervalSec=", 0) == 0) interval = std::stoi(line.substr(22));
  }
  const int attempts = JobsConfig{}.max_attempts;
  EXPECT_GE(burst, 2 * attempts + 2) << "StartLimitBurst=" << burst;
  EXPECT_GT(interval, 0);
}

}  // namespace
}  // namespace ellm::app
