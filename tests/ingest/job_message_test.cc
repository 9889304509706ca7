#include "ellm/ingest/job_message.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_env.h"

namespace ellm::ingest {
namespace {

class JobMessageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ellm::testing::MakeTempDir("ellm-jobmsg");
    std::filesystem::create_directories(dir_ + "/in");
    std::filesystem::create_directories(dir_ + "/secret");
    std::ofstream(dir_ + "/in/a.txt") << "hello";
    std::ofstream(dir_ + "/secret/s.txt") << "no";
    limits_.pipelines = {"summarize-report", "document-stats"};
    limits_.allowed_roots = {dir_ + "/in"};
    limits_.max_inline_bytes = 16;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  ParsedJob Parse(const std::string& payload, const std::string& key = "") {
    return ParseJobMessage(payload, key, limits_);
  }
  std::string Doc(const std::string& path) {
    return R"({"id":"j1","pipeline":"summarize-report","documents":[{"path":")" + path + R"("}]})";
  }
  std::string dir_;
  JobMessageLimits limits_;
};

TEST_F(JobMessageTest, AcceptsAFullValidMessage) {
  std::string payload = R"({"version":1,"id":"q3-2026","pipeline":"summarize-report",)"
                        R"("documents":[{"path":")" +
                        dir_ +
                        R"(/in/a.txt"},{"name":"m.txt","content_base64":"aGk="}],)"
                        R"("params":{"lang":"en"},"reply_to":"team.results","timeout_s":600})";
  auto p = Parse(payload, "q3-2026");
  ASSERT_TRUE(p.ok()) << p.error_code << ": " << p.error;
  EXPECT_EQ(p.message.id, "q3-2026");
  ASSERT_EQ(p.message.documents.size(), 2u);
  EXPECT_EQ(p.message.documents[0].resolved_path,
            std::filesystem::canonical(dir_ + "/in/a.txt").string());
  EXPECT_TRUE(p.message.documents[1].is_inline);
  EXPECT_EQ(p.message.documents[1].inline_bytes, "hi");
  EXPECT_EQ(p.message.documents[1].Label(), "inline:m.txt");
  EXPECT_EQ(p.message.params_json, R"({"lang":"en"})");
  EXPECT_EQ(*p.message.reply_to, "team.results");
  EXPECT_EQ(p.message.timeout_s, 600);
}

// Issue 53: reply_to could name any topic: Kafka's internal ones, the jobs
// topic (the result would come back as a job) or the dead-letter topic.
TEST_F(JobMessageTest, ReplyToNamesOnlyTopicsTheOperatorAllows) {
  limits_.reserved_topics = {"ellm.jobs", "ellm.jobs.dlq"};
  auto with = [&](const std::string& topic) {
    return Parse(R"({"id":"j","pipeline":"summarize-report","reply_to":")" + topic +
                 R"(","documents":[{"name":"a.txt","content_base64":"aGk="}]})");
  };
  for (const char* refused :
       {"__consumer_offsets", "__transaction_state", "ellm.jobs", "ellm.jobs.dlq"}) {
    const ParsedJob p = with(refused);
    EXPECT_EQ(p.error_code, "reply_to_not_allowed") << refused << ": " << p.error;
    EXPECT_NE(p.error.find(refused), std::string::npos) << p.error;
  }
  EXPECT_TRUE(with("team-a.results").ok());
  limits_.reply_topics = {"team-*", "audit.results"};
  EXPECT_TRUE(with("team-a.results").ok());
  EXPECT_TRUE(with("audit.results").ok());
  const ParsedJob other = with("audit.results2");
  EXPECT_EQ(other.error_code, "reply_to_not_allowed");
  EXPECT_NE(other.error.find("kafka.reply_topics"), std::string::npos) << other.error;
  EXPECT_EQ(with("__team-x").error_code, "reply_to_not_allowed");
  // Still never the reserved ones, even when a pattern would match them.
  limits_.reply_topics = {"ellm*"};
  EXPECT_EQ(with("ellm.jobs").error_code, "reply_to_not_allowed");
  EXPECT_TRUE(with("ellm.team").ok());
}

// Issue 53: the store keeps HTTP jobs under "http:"; a message taking that
// prefix could occupy or answer for one, so it is refused, and its id is
// not kept (the failure is filed under the topic position instead).
TEST_F(JobMessageTest, TheHttpJobsPrefixIsNotAMessagesId) {
  auto p = Parse(R"({"id":"http:q3","pipeline":"summarize-report","documents":[{"path":")" + dir_ +
                 R"(/in/a.txt"}]})");
  EXPECT_EQ(p.error_code, "invalid_message");
  EXPECT_NE(p.error.find("'http:'"), std::string::npos) << p.error;
  EXPECT_TRUE(p.message.id.empty()) << p.message.id;
  auto fine = Parse(R"({"id":"httpq3:x","pipeline":"summarize-report","documents":[{"path":")" +
                    dir_ + R"(/in/a.txt"}]})");
  EXPECT_TRUE(fine.ok()) << fine.error;
}

TEST_F(JobMessageTest, RejectsEachKindOfBadMessageWithItsCode) {
  struct Case {
    std::string payload, key, code, says;
  };
  std::vector<Case> cases = {
      {"not json", "", "invalid_json", "JSON"},
      {"[1,2]", "", "invalid_message", "object"},
      {R"({"pipeline":"summarize-report","documents":[]})", "", "invalid_message", "'id'"},
      {R"({"id":"has space","pipeline":"x","documents":[]})", "", "invalid_message", "'id'"},
      {R"({"id":"j","pipeline":"nope","documents":[{"path":"/x"}]})", "", "unknown_pipeline",
       "summarize-report"},
      {R"({"id":"j","pipeline":"summarize-report","documents":"x"})", "", "invalid_message",
       "documents"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[]})", "", "invalid_message",
       "non-empty"},
      {R"({"id":"j","version":2,"pipeline":"summarize-report","documents":[]})", "",
       "unsupported_version", "version 1"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[],"extra":1})", "",
       "invalid_message", "'extra'"},
      {R"({"id":"j","pipeline":"summarize-report","params":[1],"documents":[{"path":"/"}]})", "",
       "invalid_message", "params"},
      {R"({"id":"j","pipeline":"summarize-report","reply_to":"team results","documents":[{"path":"/"}]})",
       "", "invalid_message", "legal Kafka topic name"},
      {R"({"id":"j","pipeline":"summarize-report","reply_to":"..","documents":[{"path":"/"}]})", "",
       "invalid_message", "'..'"},
      {R"({"id":"j","pipeline":"summarize-report","reply_to":")" + std::string(250, 'a') +
           R"(","documents":[{"path":"/"}]})",
       "", "invalid_message", "1-249"},
      {R"({"id":"j","pipeline":"summarize-report","timeout_s":0,"documents":[{"path":"/"}]})", "",
       "invalid_message", "'timeout_s' must be a positive integer"},
      {R"({"id":"j","pipeline":"summarize-report","timeout_s":-5,"documents":[{"path":"/"}]})", "",
       "invalid_message", "'timeout_s'"},
      {R"({"id":"j","pipeline":"summarize-report","timeout_s":1.5,"documents":[{"path":"/"}]})", "",
       "invalid_message", "'timeout_s'"},
      {R"({"id":"j","pipeline":"summarize-report","timeout_s":"60","documents":[{"path":"/"}]})",
       "", "invalid_message", "'timeout_s'"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[{"path":"rel.pdf"}]})", "",
       "invalid_message", "absolute"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[{"name":"a","content_base64":"@@@@"}]})",
       "", "invalid_message", "base64"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[{"name":"a","content_base64":")" +
           std::string(40, 'Q') + R"("}]})",
       "", "inline_too_large", "limited to 16"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[{"path":"/a","content_base64":"aGk="}]})",
       "", "invalid_message", "exactly one"},
      {R"({"id":"j","pipeline":"summarize-report","documents":[{"path":"/a"}]})", "other",
       "key_mismatch", "'other'"},
  };
  for (const Case& c : cases) {
    auto p = Parse(c.payload, c.key);
    EXPECT_EQ(p.error_code, c.code) << c.payload << " -> " << p.error;
    EXPECT_NE(p.error.find(c.says), std::string::npos) << c.payload << " -> " << p.error;
  }
}

TEST_F(JobMessageTest, KeepsTheIdOfAnInvalidMessageForTheStore) {
  auto p = Parse(R"({"id":"keep-me","pipeline":"nope","documents":[]})");
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.message.id, "keep-me");
}

// Issue 53: a message whose params nest 2,000,000 arrays deep used to
// reach nlohmann's recursive dump (and crash the daemon before the attempt
// was stored, so that the redelivered message crashed it again).
TEST_F(JobMessageTest, DeeplyNestedParamsAreAnInvalidMessageNamingTheLimit) {
  const std::string head = R"({"id":"deep","pipeline":"summarize-report","params":{"x":)";
  const std::string tail = R"(},"documents":[{"path":")" + dir_ + R"(/in/a.txt"}]})";
  const size_t levels = 2000000;
  auto p = Parse(head + std::string(levels, '[') + std::string(levels, ']') + tail, "deep");
  EXPECT_EQ(p.error_code, "invalid_message");
  EXPECT_EQ(p.error, "the message: JSON nested deeper than 64 levels at byte " +
                         std::to_string(head.size() + 62));
  // At the limit (the message, params and 62 arrays) it is a valid job, and
  // brackets inside a string never count.
  auto at_limit = Parse(head + std::string(62, '[') + std::string(62, ']') + tail, "deep");
  EXPECT_TRUE(at_limit.ok()) << at_limit.error;
  auto in_string = Parse(head + "\"" + std::string(levels, '[') + "\"" + tail, "deep");
  EXPECT_TRUE(in_string.ok()) << in_string.error;
  // The version and timeout_s are printed in their errors: bounded too.
  const std::string deep = std::string(levels, '[') + std::string(levels, ']');
  EXPECT_EQ(Parse(R"({"id":"v","version":)" + deep + "}").error_code, "invalid_message");
  EXPECT_EQ(Parse(R"({"id":"t","timeout_s":)" + deep + "}").error_code, "invalid_message");
}

TEST_F(JobMessageTest, ChecksPathsAfterResolvingSymlinks) {
  auto missing = Parse(Doc(dir_ + "/in/none.pdf"));
  EXPECT_EQ(missing.error_code, "document_not_found") << missing.error;
  auto outside = Parse(Doc(dir_ + "/secret/s.txt"));
  EXPECT_EQ(outside.error_code, "path_not_allowed") << outside.error;
  auto dotdot = Parse(Doc(dir_ + "/in/../secret/s.txt"));
  EXPECT_EQ(dotdot.error_code, "path_not_allowed") << dotdot.error;
  std::filesystem::create_symlink(dir_ + "/secret/s.txt", dir_ + "/in/link.txt");
  auto link = Parse(Doc(dir_ + "/in/link.txt"));
  EXPECT_EQ(link.error_code, "path_not_allowed") << link.error;
  EXPECT_NE(link.error.find("secret"), std::string::npos);
  auto dir = Parse(Doc(dir_ + "/in"));
  EXPECT_EQ(dir.error_code, "document_unreadable") << dir.error;
  // A root that is a prefix of another directory's name does not admit it.
  std::filesystem::create_directories(dir_ + "/in2");
  std::ofstream(dir_ + "/in2/b.txt") << "x";
  EXPECT_EQ(Parse(Doc(dir_ + "/in2/b.txt")).error_code, "path_not_allowed");
  EXPECT_TRUE(Parse(Doc(dir_ + "/in/a.txt")).ok());
}

TEST(Base64, DecodesRfc4648Vectors) {
  EXPECT_EQ(*DecodeBase64(""), "");
  EXPECT_EQ(*DecodeBase64("Zg=="), "f");
  EXPECT_EQ(*DecodeBase64("Zm8="), "fo");
  EXPECT_EQ(*DecodeBase64("Zm9v"), "foo");
  EXPECT_EQ(*DecodeBase64("Zm9vYmFy"), "foobar");
  EXPECT_FALSE(DecodeBase64("Zm9").has_value());
  EXPECT_FALSE(DecodeBase64("Z=9v").has_value());
  EXPECT_FALSE(DecodeBase64("Zm9v!A==").has_value());
  for (const char* t : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    EXPECT_EQ(*DecodeBase64(EncodeBase64(t)), t);
  }
  EXPECT_EQ(EncodeBase64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
}

}  // namespace
}  // namespace ellm::ingest
