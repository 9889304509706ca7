#include "ellm/store/database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_env.h"

namespace ellm::store {
namespace {

class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ellm::testing::MakeTempDir("ellm-store"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(DatabaseTest, CreatesSchemaWithDurableSettings) {
  auto db = Database::Open(dir_ + "/ellm.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA user_version"), Database::SchemaVersion());
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(*(*db)->QueryText("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA synchronous"), 2);  // FULL
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA foreign_keys"), 1);
  EXPECT_EQ(*(*db)->QueryInt("SELECT count(*) FROM sqlite_master WHERE name IN "
                             "('jobs','documents','results','events')"),
            4);
}

// The daemon's /healthz probes the store with ProbeWrite: it writes, it
// changes nothing, and it fails (Unavailable, saying why) while another
// connection holds the write lock.
TEST_F(DatabaseTest, ProbeWriteWritesNothingAndFailsWhileAnotherWriterHoldsTheLock) {
  DatabaseOptions quick;
  quick.busy_timeout_ms = 50;
  auto db = Database::Open(dir_ + "/ellm.db", quick);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto other = Database::Open(dir_ + "/ellm.db");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  // data_version changes when another connection commits.
  const int64_t seen_before = *(*other)->QueryInt("PRAGMA data_version");
  Status probed = (*db)->ProbeWrite();
  EXPECT_TRUE(probed.ok()) << probed.ToString();
  EXPECT_NE(*(*other)->QueryInt("PRAGMA data_version"), seen_before) << "a real commit";
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA application_id"), kApplicationId);

  ASSERT_TRUE((*other)->Exec("BEGIN IMMEDIATE").ok());
  Status locked = (*db)->ProbeWrite();
  EXPECT_EQ(locked.code(), StatusCode::kUnavailable) << locked.ToString();
  EXPECT_NE(locked.message().find("locked"), std::string::npos) << locked.ToString();
  ASSERT_TRUE((*other)->Exec("ROLLBACK").ok());
  EXPECT_TRUE((*db)->ProbeWrite().ok());
}

// Two daemons started on one new store at the same moment: one creates and
// migrates it while the other switches it to WAL. SQLite answers that
// switch with BUSY at once, without the busy handler, while another
// connection holds the write lock; Open waits for the lock (up to
// busy_timeout_ms) instead of failing the daemon's start (seen in CI:
// "'PRAGMA journal_mode=WAL' failed: database is locked").
TEST_F(DatabaseTest, OpenWaitsForAnotherConnectionsWriteLockOnANewStore) {
  const std::string path = dir_ + "/ellm.db";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  // As a daemon's connection, the holder waits for locks: its COMMIT needs
  // the readers gone, and Open's retries read between their waits.
  sqlite3_busy_timeout(raw, 5000);
  ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE held(x); BEGIN IMMEDIATE; INSERT INTO held VALUES(1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  int committed = -1;
  std::thread release([raw, &committed] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    committed = sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
  });
  auto db = Database::Open(path);
  release.join();
  sqlite3_close(raw);
  EXPECT_EQ(committed, SQLITE_OK);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*(*db)->QueryText("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(*(*db)->QueryInt("PRAGMA user_version"), Database::SchemaVersion());
  EXPECT_EQ(*(*db)->QueryInt("SELECT count(*) FROM held"), 1);
}

TEST_F(DatabaseTest, ReopeningKeepsDataAndDoesNotRemigrate) {
  {
    auto db = Database::Open(dir_ + "/ellm.db");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        (*db)->Exec("INSERT INTO jobs(id, pipeline, status) VALUES ('j1','p','queued')").ok());
  }
  auto db = Database::Open(dir_ + "/ellm.db");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*(*db)->QueryInt("SELECT count(*) FROM jobs"), 1);
}

TEST_F(DatabaseTest, EnforcesForeignKeysAndStatusValues) {
  auto db = Database::Open(dir_ + "/ellm.db");
  ASSERT_TRUE(db.ok());
  EXPECT_FALSE((*db)->Exec("INSERT INTO documents(job_id, ordinal) VALUES ('nope', 0)").ok());
  EXPECT_FALSE((*db)->Exec("INSERT INTO jobs(id, pipeline, status) VALUES ('j','p','weird')").ok());
}

TEST_F(DatabaseTest, RefusesForeignAndNewerDatabases) {
  {
    auto db = Database::Open(dir_ + "/other.db");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA application_id=1234").ok());
  }
  auto other = Database::Open(dir_ + "/other.db");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("another application"), std::string::npos);
  {
    auto db = Database::Open(dir_ + "/newer.db");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version=999").ok());
  }
  auto newer = Database::Open(dir_ + "/newer.db");
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("newer"), std::string::npos);
}

TEST_F(DatabaseTest, NotADatabaseIsAClearError) {
  { std::ofstream(dir_ + "/junk.db") << std::string(4096, 'x'); }
  auto db = Database::Open(dir_ + "/junk.db");
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("junk.db"), std::string::npos);
  auto missing_dir = Database::Open(dir_ + "/no/such/dir/ellm.db");
  EXPECT_FALSE(missing_dir.ok());
}

}  // namespace
}  // namespace ellm::store
