#include "config.h"

#include <gtest/gtest.h>

#include "test_env.h"

namespace ellm::daemon {
namespace {

TEST(Config, ShippedDefaultFileIsValid) {
  auto c = LoadConfig(ellm::testing::SourceDir() + "/configs/ellm.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kafka.jobs_topic, "ellm.jobs");
  EXPECT_EQ(c->log.level, "info");
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

}  // namespace
}  // namespace ellm::daemon
