// Round trips through the real broker (scripts/kafka start): what the job
// consumer relies on — committed messages are never delivered again to the
// group, uncommitted ones are.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "ellm/ingest/kafka.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

using std::chrono::milliseconds;

std::string Unique(const std::string& prefix) {
  return prefix + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// Polls until `n` messages arrived or `budget` passed.
std::vector<KafkaMessage> Take(KafkaConsumer& c, size_t n, milliseconds budget) {
  std::vector<KafkaMessage> got;
  auto deadline = std::chrono::steady_clock::now() + budget;
  while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto m = c.Poll(milliseconds(200));
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (m.ok() && m->has_value()) got.push_back(std::move(**m));
  }
  return got;
}

class KafkaRoundTrip : public ::testing::Test {
 protected:
  void Produce(const std::string& topic, int from, int to) {
    auto p = KafkaProducer::Create(options_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (int i = from; i < to; ++i) {
      Status s = (*p)->Produce(topic, "job-" + std::to_string(i), "payload " + std::to_string(i));
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }
  std::unique_ptr<KafkaConsumer> Consumer(const std::string& group, const std::string& topic) {
    auto c = KafkaConsumer::Create(options_, group, {topic});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  KafkaOptions options_;
};

TEST_F(KafkaRoundTrip, CommittedMessagesAreNotDeliveredAgainAfterRestart) {
  ELLM_REQUIRE_KAFKA(brokers);
  options_.brokers = brokers;
  const std::string topic = Unique("ellm-test-roundtrip");
  const std::string group = Unique("ellm-test-group");
  constexpr int kN = 50, kFirst = 30;
  Produce(topic, 0, kN);

  {
    auto c = Consumer(group, topic);
    ASSERT_NE(c, nullptr);
    auto got = Take(*c, kFirst, milliseconds(60000));
    ASSERT_EQ(got.size(), static_cast<size_t>(kFirst));
    for (int i = 0; i < kFirst; ++i) {
      EXPECT_EQ(got[i].key, "job-" + std::to_string(i));
      EXPECT_EQ(got[i].payload, "payload " + std::to_string(i));
      ASSERT_TRUE(c->Commit(got[i]).ok());
    }
    ASSERT_TRUE(c->Close().ok());
  }
  // A new consumer in the same group resumes after the last commit.
  {
    auto c = Consumer(group, topic);
    ASSERT_NE(c, nullptr);
    auto got = Take(*c, kN - kFirst, milliseconds(60000));
    ASSERT_EQ(got.size(), static_cast<size_t>(kN - kFirst));
    std::set<std::string> keys;
    for (const auto& m : got) {
      keys.insert(m.key);
      ASSERT_TRUE(c->Commit(m).ok());
    }
    EXPECT_EQ(keys.size(), static_cast<size_t>(kN - kFirst));
    EXPECT_EQ(*keys.begin(), "job-30");
    EXPECT_EQ(keys.count("job-29"), 0u);
    ASSERT_TRUE(c->Close().ok());
  }
  // Everything is committed: a third consumer sees only what is new.
  Produce(topic, kN, kN + 1);
  {
    auto c = Consumer(group, topic);
    ASSERT_NE(c, nullptr);
    auto got = Take(*c, 2, milliseconds(5000));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].key, "job-50");
  }
}

TEST_F(KafkaRoundTrip, UncommittedMessagesAreRedeliveredAfterACrash) {
  ELLM_REQUIRE_KAFKA(brokers);
  options_.brokers = brokers;
  const std::string topic = Unique("ellm-test-redeliver");
  const std::string group = Unique("ellm-test-group");
  Produce(topic, 0, 10);
  {
    auto c = Consumer(group, topic);
    ASSERT_NE(c, nullptr);
    auto got = Take(*c, 10, milliseconds(60000));
    ASSERT_EQ(got.size(), 10u);
    ASSERT_TRUE(c->Commit(got[3]).ok());  // jobs 0..3 done, 4..9 lost in the "crash"
  }
  auto c = Consumer(group, topic);
  ASSERT_NE(c, nullptr);
  auto got = Take(*c, 6, milliseconds(60000));
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got.front().key, "job-4");
  EXPECT_EQ(got.back().key, "job-9");
}

TEST_F(KafkaRoundTrip, ProducerStartsAfreshAfterAFatalError) {
  ELLM_REQUIRE_KAFKA(brokers);
  options_.brokers = brokers;
  const std::string topic = Unique("ellm-test-fatal");
  auto p = KafkaProducer::Create(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->Produce(topic, "job-0", "before").ok());
  (*p)->InjectFatalErrorForTest();
  // The broken handle refuses the message; the producer replaces it and sends.
  Status s = (*p)->Produce(topic, "job-1", "after");
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ((*p)->restarts(), 1);
  ASSERT_TRUE((*p)->Produce(topic, "job-2", "again").ok());
  EXPECT_EQ((*p)->restarts(), 1);
  auto c = Consumer(Unique("ellm-test-group"), topic);
  ASSERT_NE(c, nullptr);
  auto got = Take(*c, 4, milliseconds(10000));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].payload, "before");
  EXPECT_EQ(got[1].payload, "after");
  EXPECT_EQ(got[2].payload, "again");
}

// The transactional producer: an aborted transaction's messages are never
// seen by a read_committed reader; a committed one's messages and the
// consumed offset become visible together; and a second producer with the
// same transactional.id fences the first, whose open transaction is then
// aborted and whose commit fails (it starts afresh, taking the id back, so
// its next transaction works).
TEST_F(KafkaRoundTrip, TransactionsCommitMessagesWithTheOffsetOrNeither) {
  ELLM_REQUIRE_KAFKA(brokers);
  options_.brokers = brokers;
  const std::string in = Unique("ellm-test-txn-in"), out = Unique("ellm-test-txn-out");
  const std::string group = Unique("ellm-test-txn-group");
  Produce(in, 0, 3);
  auto c = Consumer(group, in);
  ASSERT_NE(c, nullptr);
  auto got = Take(*c, 3, milliseconds(60000));
  ASSERT_EQ(got.size(), 3u);
  const std::string id = Unique("ellm-test-txn");
  auto p = KafkaProducer::Create(options_, id);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->transactional());

  ASSERT_TRUE((*p)->Produce(out, "aborted", "x").ok());
  ASSERT_TRUE((*p)->AbortTransaction().ok());
  ASSERT_TRUE((*p)->Produce(out, "committed", "y").ok());
  Status committed = (*p)->CommitTransaction(got[0], c->Membership());
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  auto offset = c->Committed({in, got[0].partition}, milliseconds(10000));
  ASSERT_TRUE(offset.ok()) << offset.status().ToString();
  EXPECT_EQ(*offset, got[0].offset + 1);

  // Fenced: a newer producer with the same id takes over.
  ASSERT_TRUE((*p)->Produce(out, "fenced", "z").ok());
  auto successor = KafkaProducer::Create(options_, id);
  ASSERT_TRUE(successor.ok()) << successor.status().ToString();
  Status zombie = (*p)->CommitTransaction(got[1], c->Membership());
  EXPECT_EQ(zombie.code(), StatusCode::kUnavailable) << zombie.ToString();
  EXPECT_EQ((*p)->restarts(), 1);
  EXPECT_EQ(*c->Committed({in, got[1].partition}, milliseconds(10000)), got[0].offset + 1);
  ASSERT_TRUE((*p)->Produce(out, "restarted", "w").ok());
  committed = (*p)->CommitTransaction(got[1], c->Membership());
  ASSERT_TRUE(committed.ok()) << committed.ToString();

  KafkaOptions read = options_;
  read.properties["isolation.level"] = "read_committed";
  auto reader = KafkaConsumer::Create(read, Unique("ellm-test-reader"), {out});
  ASSERT_TRUE(reader.ok());
  std::vector<std::string> keys;
  for (const auto& m : Take(**reader, 3, milliseconds(15000))) keys.push_back(m.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"committed", "restarted"}));
}

// No broker at all: the delivery report says so once message.timeout.ms is
// over, and a report that arrives after the call gave up is harmless.
TEST(KafkaProducerTest, UnreachableBrokerFailsAfterTheMessageTimeout) {
  KafkaOptions o;
  o.brokers = "127.0.0.1:1";  // nothing listens on port 1
  o.properties["message.timeout.ms"] = "1500";
  auto p = KafkaProducer::Create(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (int i = 0; i < 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Status s = (*p)->Produce("ellm-test-nowhere", "k", "v");
    auto waited = std::chrono::steady_clock::now() - t0;
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.ToString();
    EXPECT_GE(waited, milliseconds(1000));
    EXPECT_LT(waited, milliseconds(15000));
  }
}

TEST(KafkaOptionsTest, MessageTimeoutMustBeANumber) {
  KafkaOptions o;
  o.properties["message.timeout.ms"] = "soon";
  auto p = KafkaProducer::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("message.timeout.ms"), std::string::npos);
}

TEST(KafkaOptionsTest, BadPropertyIsAClearError) {
  KafkaOptions o;
  o.properties["no.such.property"] = "1";
  auto p = KafkaProducer::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no.such.property"), std::string::npos);
}

}  // namespace
}  // namespace ellm::ingest
