#include "ellm/store/job_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "ellm/store/job_json.h"
#include "test_env.h"

namespace ellm::store {
namespace {

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ellm::testing::MakeTempDir("ellm-jobstore"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<JobStore> Open(int max_attempts = 3, bool read_only = false) {
    JobStoreOptions o;
    o.max_attempts = max_attempts;
    o.database.read_only = read_only;
    auto s = JobStore::Open(dir_ + "/ellm.db", o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static NewJob Job(const std::string& id) {
    NewJob j;
    j.id = id;
    j.pipeline = "document-stats";
    j.params_json = R"({"k":1})";
    j.reply_to = "replies";
    j.source = {"ellm.jobs", 2, 41};
    return j;
  }
  static ResultRecord Result(const std::string& text) {
    ResultRecord r;
    r.output_text = text;
    r.output_json = R"({"words":3})";
    r.model_fingerprint = "sha256:abc";
    r.pipeline_name = "document-stats";
    r.pipeline_version = "1";
    r.strategy = "single-pass";
    r.prompt_tokens = 10;
    r.constraint_ms = 7;
    r.generated_tokens = 5;
    return r;
  }
  std::string dir_;
};

TEST_F(JobStoreTest, RunsANewJobOnceAndRefusesItAfterwards) {
  auto store = Open();
  auto b = store->Begin(Job("j1"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->decision, BeginDecision::kRun);
  EXPECT_EQ(b->attempt, 1);
  auto stored = store->Succeed("j1", {{0, "/srv/a.pdf", "ff", 3, 100}}, Result("summary"));
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_TRUE(*stored);

  auto again = store->Begin(Job("j1"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->decision, BeginDecision::kAlreadyDone);
  EXPECT_EQ(again->status, JobStatus::kSucceeded);
  auto twice = store->Succeed("j1", {}, Result("other"));
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(*twice);

  auto job = store->Get("j1");
  ASSERT_TRUE(job.ok() && job->has_value());
  const JobRecord& j = **job;
  EXPECT_EQ(j.status, JobStatus::kSucceeded);
  EXPECT_EQ(j.attempts, 1);
  ASSERT_TRUE(j.result.has_value());
  EXPECT_EQ(j.result->output_text, "summary");
  EXPECT_EQ(*j.result->output_json, R"({"words":3})");
  EXPECT_EQ(j.result->strategy, "single-pass");
  EXPECT_EQ(j.result->constraint_ms, 7);
  ASSERT_EQ(j.documents.size(), 1u);
  EXPECT_EQ(j.documents[0].page_count, 3);
  EXPECT_EQ(j.source.partition, 2);
  EXPECT_EQ(j.source.offset, 41);
  EXPECT_EQ(*j.reply_to, "replies");
  EXPECT_FALSE(j.finished_at.empty());
  EXPECT_EQ(*store->database().QueryInt("SELECT count(*) FROM results"), 1);
  ASSERT_GE(j.events.size(), 3u);
  EXPECT_EQ(j.events.back().kind, "duplicate");
}

TEST_F(JobStoreTest, PruneDeletesOnlyOldFinishedJobsWithEverythingTheyHold) {
  auto store = Open();
  ASSERT_TRUE(store->Begin(Job("old")).ok());
  ASSERT_TRUE(store->Succeed("old", {{0, "/srv/a.pdf", "ff", 3, 100}}, Result("x")).ok());
  ASSERT_TRUE(store->Begin(Job("recent")).ok());
  ASSERT_TRUE(store->Succeed("recent", {}, Result("y")).ok());
  ASSERT_TRUE(store->Begin(Job("old-running")).ok());
  ASSERT_TRUE(store->Enqueue(Job("old-queued"), "{}").ok());
  // Age three of them by 100 days.
  ASSERT_TRUE(store->database()
                  .Exec("UPDATE jobs SET finished_at=strftime('%Y-%m-%dT%H:%M:%fZ','now','-100 "
                        "days'), updated_at=strftime('%Y-%m-%dT%H:%M:%fZ','now','-100 days') "
                        "WHERE id IN ('old', 'old-running', 'old-queued')")
                  .ok());
  auto pruned = store->Prune(90);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(*pruned, 1);
  EXPECT_FALSE(store->Get("old")->has_value());
  EXPECT_TRUE(store->Get("recent")->has_value());
  EXPECT_TRUE(store->Get("old-running")->has_value()) << "unfinished jobs are never pruned";
  EXPECT_TRUE(store->Get("old-queued")->has_value());
  EXPECT_EQ(*store->database().QueryInt("SELECT count(*) FROM results WHERE job_id='old'"), 0);
  EXPECT_EQ(*store->database().QueryInt("SELECT count(*) FROM documents WHERE job_id='old'"), 0);
  EXPECT_EQ(*store->database().QueryInt("SELECT count(*) FROM events WHERE job_id='old'"), 0);
}

TEST_F(JobStoreTest, AnOnlineBackupHoldsEveryJob) {
  auto store = Open();
  ASSERT_TRUE(store->Begin(Job("b1")).ok());
  ASSERT_TRUE(store->Succeed("b1", {{0, "/srv/a.pdf", "ff", 3, 100}}, Result("kept")).ok());
  ASSERT_TRUE(store->Begin(Job("b2")).ok());  // still running while the copy is made
  const std::string copy = dir_ + "/backup.db";
  ASSERT_TRUE(store->database().BackupTo(copy).ok());
  struct stat st {};
  ASSERT_EQ(::stat(copy.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  JobStoreOptions o;
  o.database.read_only = true;
  auto restored = JobStore::Open(copy, o);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  auto j = (*restored)->Get("b1");
  ASSERT_TRUE(j.ok() && j->has_value());
  EXPECT_EQ((*j)->result->output_text, "kept");
  EXPECT_EQ((*restored)->List(std::nullopt)->size(), 2u);
  EXPECT_FALSE(store->database().BackupTo(dir_ + "/no/such/dir/x.db").ok());
}

// Issue 53: links planted where the backup writes (the file itself, its
// partial copy and SQLite's side files of that copy) are replaced or
// refused, never written through: the files they point to keep their
// contents.
TEST_F(JobStoreTest, ABackupNeverWritesThroughAPlantedSymlink) {
  auto store = Open();
  ASSERT_TRUE(store->Begin(Job("s1")).ok());
  const std::string copy = dir_ + "/planted.db";
  std::vector<std::string> victims;
  for (const char* suffix : {"", ".partial", ".partial-journal", ".partial-wal"}) {
    const std::string victim = dir_ + "/victim" + suffix;
    std::ofstream(victim) << "precious";
    victims.push_back(victim);
    ASSERT_EQ(::symlink(victim.c_str(), (copy + suffix).c_str()), 0) << suffix;
  }
  const Status backed_up = store->database().BackupTo(copy);
  for (const std::string& victim : victims) {
    std::ifstream in(victim);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "precious") << victim << " was written through a link";
  }
  ASSERT_TRUE(backed_up.ok()) << backed_up.ToString();
  struct stat st {};
  ASSERT_EQ(::lstat(copy.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the link at the destination is replaced by the copy";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(JobStoreTest, TheInboxKeepsQueuedMessagesUntilTheirJobsFinish) {
  {
    auto store = Open();
    auto added = store->Enqueue(Job("h1"), R"({"id":"h1"})");
    ASSERT_TRUE(added.ok()) << added.status().ToString();
    EXPECT_TRUE(*added);
    EXPECT_FALSE(*store->Enqueue(Job("h1"), "other"));  // the same id: nothing changes
    ASSERT_TRUE(store->Enqueue(Job("h2"), R"({"id":"h2"})").ok());
    auto j = store->Get("h1");
    ASSERT_TRUE(j.ok() && j->has_value());
    EXPECT_EQ((*j)->status, JobStatus::kQueued);
    EXPECT_EQ((*j)->attempts, 0);
    auto b = store->Begin(Job("h1"));  // a queued job begins its first attempt
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->attempt, 1);
  }
  // After a restart (the process died with h1 running): both come back.
  auto store = Open();
  ASSERT_TRUE(store->RecoverInterrupted().ok());
  auto inbox = store->Inbox();
  ASSERT_TRUE(inbox.ok()) << inbox.status().ToString();
  ASSERT_EQ(inbox->size(), 2u);
  EXPECT_EQ((*inbox)[0], (std::pair<std::string, std::string>{"h1", R"({"id":"h1"})"}));
  EXPECT_EQ((*inbox)[1].first, "h2");
  // A finished job leaves the inbox, even before it is removed.
  ASSERT_TRUE(store->Begin(Job("h2")).ok());
  ASSERT_TRUE(store->Succeed("h2", {}, Result("done")).ok());
  EXPECT_EQ(store->Inbox()->size(), 1u);
  ASSERT_TRUE(store->RemoveFromInbox("h2").ok());
  EXPECT_EQ(store->Inbox()->size(), 1u);
}

TEST_F(JobStoreTest, RetriesAnInterruptedJobThenGivesUp) {
  {
    auto store = Open(2);
    ASSERT_EQ(store->Begin(Job("j")).value().attempt, 1);
  }  // "crash": the job stays running
  auto store = Open(2);
  EXPECT_EQ(store->RecoverInterrupted().value(), 1);
  EXPECT_EQ(store->Get("j").value()->status, JobStatus::kQueued);
  auto second = store->Begin(Job("j"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->decision, BeginDecision::kRun);
  EXPECT_EQ(second->attempt, 2);
  auto third = store->Begin(Job("j"));  // delivered again without finishing
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->decision, BeginDecision::kGaveUp);
  auto j = store->Get("j").value();
  EXPECT_EQ(j->status, JobStatus::kFailed);
  EXPECT_EQ(j->error_code, "attempts_exhausted");
  EXPECT_FALSE(j->result.has_value());
}

TEST_F(JobStoreTest, RequeueKeepsTheAttemptAndRecordsTheTransientError) {
  auto store = Open(3);
  ASSERT_EQ(store->Begin(Job("j")).value().attempt, 1);
  EXPECT_FALSE(store->Requeue("j", 2, "not this attempt").value());
  EXPECT_TRUE(store->Requeue("j", 1, "unavailable: fork of the extractor").value());
  auto j = store->Get("j").value();
  EXPECT_EQ(j->status, JobStatus::kQueued);
  EXPECT_EQ(j->attempts, 1);
  ASSERT_FALSE(j->events.empty());
  EXPECT_EQ(j->events.back().kind, "transient_error");
  EXPECT_EQ(j->events.back().detail, "attempt 1: unavailable: fork of the extractor");
  EXPECT_FALSE(store->Requeue("j", 1, "again").value()) << "only a running job";
  EXPECT_EQ(store->Begin(Job("j")).value().attempt, 2);
  EXPECT_EQ(store->max_attempts(), 3);
}

TEST_F(JobStoreTest, RecoveryFailsJobsOutOfAttempts) {
  auto store = Open(1);
  ASSERT_TRUE(store->Begin(Job("a")).ok());
  EXPECT_EQ(store->RecoverInterrupted().value(), 0);
  EXPECT_EQ(store->Get("a").value()->status, JobStatus::kFailed);
}

TEST_F(JobStoreTest, FailInsertsUnknownJobsAndFirstOutcomeWins) {
  auto store = Open();
  NewJob bad = Job("invalid:ellm.jobs:0:7");
  bad.pipeline = "";
  auto f = store->Fail(bad, "invalid_message", "not JSON");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(*f);
  auto j = store->Get(bad.id).value();
  EXPECT_EQ(j->status, JobStatus::kFailed);
  EXPECT_EQ(j->error_code, "invalid_message");

  ASSERT_TRUE(store->Begin(Job("ok")).ok());
  ASSERT_TRUE(store->Succeed("ok", {}, Result("done")).value());
  EXPECT_FALSE(store->Fail(Job("ok"), "late", "too late").value());
  EXPECT_EQ(store->Get("ok").value()->status, JobStatus::kSucceeded);
}

TEST_F(JobStoreTest, SucceedWithoutBeginIsAnError) {
  auto store = Open();
  auto s = store->Succeed("ghost", {}, Result("x"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("ghost"), std::string::npos);
}

TEST_F(JobStoreTest, ListFiltersByStatus) {
  auto store = Open();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->Begin(Job("j" + std::to_string(i))).ok());
  ASSERT_TRUE(store->Succeed("j1", {}, Result("x")).value());
  ASSERT_TRUE(store->Fail(Job("j2"), "e", "m").value());
  EXPECT_EQ(store->List(std::nullopt).value().size(), 5u);
  EXPECT_EQ(store->List(JobStatus::kRunning).value().size(), 3u);
  auto done = store->List(JobStatus::kSucceeded).value();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, "j1");
  EXPECT_FALSE(ParseJobStatus("nonsense").ok());
}

TEST_F(JobStoreTest, ListKeepsTheIdsOfAPrefix) {
  auto store = Open();
  for (const char* id : {"http:a", "http:b", "a", "httpx", "batch:m:1"}) {
    ASSERT_TRUE(store->Begin(Job(id)).ok()) << id;
  }
  ASSERT_TRUE(store->Succeed("http:a", {}, Result("x")).value());
  std::vector<std::string> ids;
  const std::vector<JobRecord> http = store->List(std::nullopt, 100, "http:").value();
  for (const JobRecord& j : http) ids.push_back(j.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"http:a", "http:b"}));
  auto done = store->List(JobStatus::kSucceeded, 100, "http:").value();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, "http:a");
  EXPECT_EQ(store->List(JobStatus::kSucceeded, 100, "batch:").value().size(), 0u);
}

TEST_F(JobStoreTest, ResultJsonCarriesTheStructuredOutputParsed) {
  nlohmann::json j = ResultToJson(Result("summary"));
  EXPECT_EQ(j["text"], "summary");
  EXPECT_EQ(j["json"]["words"], 3);
  EXPECT_EQ(j["strategy"], "single-pass");
  EXPECT_EQ(j["prompt_tokens"], 10);
  EXPECT_EQ(j["constraint_ms"], 7);
  ResultRecord r = Result("x");
  r.output_json = "{not json";
  EXPECT_EQ(ResultToJson(r)["json"], "{not json");
  r.output_json.reset();
  EXPECT_FALSE(ResultToJson(r).contains("json"));
}

// Issue 58: which pages of a document were read by OCR, and how well, is
// kept with the document and shown by `ellm jobs show --json`, the HTTP API
// and the result event (DocumentToJson).
TEST_F(JobStoreTest, KeepsTheScannedPagesOfEachDocument) {
  auto store = Open();
  ASSERT_TRUE(store->Begin(Job("scan")).ok());
  DocumentRecord scanned{0, "/srv/scan.pdf", "ee", 4, 900, {}};
  scanned.ocr_pages = {{2, 96, ""}, {3, 41, "low confidence"}, {4, 0, "no text found"}};
  DocumentRecord text{1, "/srv/text.pdf", "dd", 2, 300, {}};
  ASSERT_TRUE(store->Succeed("scan", {scanned, text}, Result("summary")).ok());
  auto job = store->Get("scan");
  ASSERT_TRUE(job.ok() && job->has_value());
  const JobRecord& j = **job;
  ASSERT_EQ(j.documents.size(), 2u);
  ASSERT_EQ(j.documents[0].ocr_pages.size(), 3u);
  EXPECT_EQ(j.documents[0].ocr_pages[1].page, 3);
  EXPECT_EQ(j.documents[0].ocr_pages[1].confidence, 41);
  EXPECT_EQ(j.documents[0].ocr_pages[1].note, "low confidence");
  EXPECT_TRUE(j.documents[1].ocr_pages.empty());
  EXPECT_EQ(*store->database().QueryInt("SELECT count(*) FROM documents WHERE ocr_pages IS NULL"),
            1);
  nlohmann::json shown = JobToJson(j);
  EXPECT_EQ(shown["documents"][0]["ocr_pages"][2]["note"], "no text found");
  EXPECT_EQ(shown["documents"][1]["ocr_pages"], nlohmann::json::array());
  // A column written by hand that does not parse reads as no OCR pages.
  EXPECT_TRUE(OcrPagesFromColumn("[{\"page\":").empty());
}

// Readers on their own connections see consistent, growing counts while one
// writer commits; neither side gets SQLITE_BUSY errors.
TEST_F(JobStoreTest, ConcurrentReadersWhileWriting) {
  auto writer = Open();
  constexpr int kJobs = 200;
  std::atomic<bool> done{false};
  std::atomic<int> reader_errors{0}, inconsistent{0}, reads{0};
  auto read_loop = [&] {
    auto reader = Open(3, /*read_only=*/true);
    if (!reader) {
      ++reader_errors;
      return;
    }
    int64_t last = 0;
    while (!done.load()) {
      auto n = reader->database().QueryInt("SELECT count(*) FROM results");
      auto m = reader->database().QueryInt("SELECT count(*) FROM jobs WHERE status='succeeded'");
      if (!n.ok() || !m.ok()) {
        ++reader_errors;
        continue;
      }
      if (*n < last) ++inconsistent;
      last = *n;
      ++reads;
    }
  };
  std::thread r1(read_loop), r2(read_loop);
  for (int i = 0; i < kJobs; ++i) {
    std::string id = "c" + std::to_string(i);
    ASSERT_TRUE(writer->Begin(Job(id)).ok());
    ASSERT_TRUE(writer->Succeed(id, {{0, "p", "h", 1, 1}}, Result("r")).value());
  }
  done = true;
  r1.join();
  r2.join();
  EXPECT_EQ(reader_errors.load(), 0);
  EXPECT_EQ(inconsistent.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(*writer->database().QueryInt("SELECT count(*) FROM results"), kJobs);
}

}  // namespace
}  // namespace ellm::store
