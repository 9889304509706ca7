// ellm jobs: read the job store.
//   ellm jobs list [--status S] [--limit N] [--json] [--db PATH | --config FILE]
//   ellm jobs show ID [--json] [--db PATH | --config FILE]
//   ellm jobs prune [--older-than DAYS] [--db PATH | --config FILE]
// The store is found from --db, else --config's store.path, else
// /etc/ellm/ellm.yaml's store.path when that file exists, else the default
// /var/lib/ellm/ellm.db. Opened read-only: safe while the daemon writes.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ellm/app/config.h"
#include "ellm/store/job_json.h"
#include "ellm/store/job_store.h"
#include "flags.h"

namespace ellm::cli {
namespace {

using json = nlohmann::json;

StatusOr<std::string> StorePath(const Flags& f) {
  if (f.Has("db")) return f.Get("db");
  std::string config = f.Get("config");
  if (config.empty() && access("/etc/ellm/ellm.yaml", R_OK) == 0) config = "/etc/ellm/ellm.yaml";
  if (config.empty()) return app::StoreConfig().path;
  ELLM_ASSIGN_OR_RETURN(auto c, app::LoadConfig(config));
  return c.store.path;
}

void PrintJob(const store::JobRecord& j) {
  std::printf("id:         %s\npipeline:   %s\nstatus:     %s\nattempts:   %lld\n", j.id.c_str(),
              j.pipeline.c_str(), std::string(store::JobStatusName(j.status)).c_str(),
              static_cast<long long>(j.attempts));
  if (!j.source.topic.empty()) {
    std::printf("source:     %s[%d]@%lld\n", j.source.topic.c_str(), j.source.partition,
                static_cast<long long>(j.source.offset));
  }
  std::printf("created:    %s\nfinished:   %s\n", j.created_at.c_str(), j.finished_at.c_str());
  if (!j.error_code.empty()) {
    std::printf("error:      %s: %s\n", j.error_code.c_str(), j.error_message.c_str());
  }
  for (const auto& d : j.documents) {
    // Counted from 1, as in every message (the stored ordinal is 0-based).
    std::printf("document %d of %zu: %s (%lld pages, %lld tokens, sha256 %s)\n", d.ordinal + 1,
                j.documents.size(), d.path.c_str(), static_cast<long long>(d.page_count),
                static_cast<long long>(d.token_count), d.sha256.c_str());
  }
  if (j.result) {
    const store::ResultRecord& r = *j.result;
    std::printf(
        "result:     %s %s, strategy %s, %lld prompt + %lld generated tokens, "
        "prefill %lld ms, decode %lld ms\n",
        r.pipeline_name.c_str(), r.pipeline_version.c_str(), r.strategy.c_str(),
        static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.generated_tokens),
        static_cast<long long>(r.prefill_ms), static_cast<long long>(r.decode_ms));
    std::printf("\n%s\n", r.output_text.c_str());
    if (r.output_json) std::printf("\n%s\n", r.output_json->c_str());
  }
  std::printf("\nevents:\n");
  for (const auto& e : j.events) {
    std::printf("  %s  %-13s %s\n", e.at.c_str(), e.kind.c_str(), e.detail.c_str());
  }
}

StatusOr<std::unique_ptr<store::JobStore>> OpenStore(const Flags& f) {
  ELLM_ASSIGN_OR_RETURN(std::string path, StorePath(f));
  if (access(path.c_str(), R_OK) != 0) {
    return NotFoundError("no job store at '" + path + "' (pass --db PATH or --config FILE)");
  }
  store::JobStoreOptions o;
  o.database.read_only = true;
  return store::JobStore::Open(path, o);
}

int Fail(const Status& s) {
  std::fprintf(stderr, "ellm jobs: %s\n", s.ToString().c_str());
  return 1;
}

int List(const Flags& f) {
  std::optional<store::JobStatus> status;
  if (f.Has("status")) {
    auto s = store::ParseJobStatus(f.Get("status"));
    if (!s.ok()) return Fail(s.status());
    status = *s;
  }
  auto limit = f.GetInt("limit", 100);
  if (!limit.ok()) return Fail(limit.status());
  auto st = OpenStore(f);
  if (!st.ok()) return Fail(st.status());
  auto jobs = (*st)->List(status, static_cast<int>(*limit));
  if (!jobs.ok()) return Fail(jobs.status());
  if (f.Has("json")) {
    json out = json::array();
    for (const auto& j : *jobs) out.push_back(store::JobToJson(j));
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%-28s %-10s %-20s %3s  %-24s %s\n", "ID", "STATUS", "PIPELINE", "TRY", "UPDATED",
              "ERROR");
  for (const auto& j : *jobs) {
    std::printf("%-28s %-10s %-20s %3lld  %-24s %s\n", j.id.c_str(),
                std::string(store::JobStatusName(j.status)).c_str(), j.pipeline.c_str(),
                static_cast<long long>(j.attempts), j.updated_at.c_str(), j.error_code.c_str());
  }
  return 0;
}

int Show(const Flags& f) {
  if (f.positional().size() != 1) {
    std::fputs("usage: ellm jobs show ID [--json] [--db PATH | --config FILE]\n", stderr);
    return 2;
  }
  auto st = OpenStore(f);
  if (!st.ok()) return Fail(st.status());
  auto job = (*st)->Get(f.positional()[0]);
  if (!job.ok()) return Fail(job.status());
  if (!job->has_value()) {
    return Fail(NotFoundError("no job '" + f.positional()[0] + "' in the store"));
  }
  if (f.Has("json")) {
    std::cout << store::JobToJson(**job).dump(2) << "\n";
  } else {
    PrintJob(**job);
  }
  return 0;
}

// ellm jobs prune [--older-than DAYS]: deletes finished jobs older than
// DAYS (default: the config's store.retention_days, else 90).
int Prune(const Flags& f) {
  Status s = [&]() -> Status {
    int64_t days = app::StoreConfig().retention_days;
    std::string config = f.Get("config");
    if (config.empty() && !f.Has("db") && access("/etc/ellm/ellm.yaml", R_OK) == 0) {
      config = "/etc/ellm/ellm.yaml";
    }
    if (!config.empty()) {
      ELLM_ASSIGN_OR_RETURN(auto c, app::LoadConfig(config));
      days = c.store.retention_days;
    }
    ELLM_ASSIGN_OR_RETURN(days, f.GetInt("older-than", days));
    if (days < 1 || days > 1000000) {
      return InvalidArgumentError("--older-than must be a number of days >= 1");
    }
    ELLM_ASSIGN_OR_RETURN(std::string path, StorePath(f));
    if (access(path.c_str(), W_OK) != 0) {
      return NotFoundError("no writable job store at '" + path + "'");
    }
    ELLM_ASSIGN_OR_RETURN(auto store, store::JobStore::Open(path));
    ELLM_ASSIGN_OR_RETURN(int64_t pruned, store->Prune(static_cast<int>(days)));
    std::printf("pruned %lld finished job(s) older than %lld days from %s\n",
                static_cast<long long>(pruned), static_cast<long long>(days), path.c_str());
    return OkStatus();
  }();
  return s.ok() ? 0 : Fail(s);
}

}  // namespace

// ellm store backup FILE: an online copy of the job store (safe while the
// daemon writes), through SQLite's backup API.
int Store(const Args& args) {
  constexpr const char* kUsage = "usage: ellm store backup FILE [--db PATH | --config FILE]\n";
  if (args.empty() || args[0] != "backup") {
    std::fputs(kUsage, stderr);
    return 2;
  }
  auto f = Flags::Parse(Args(args.begin() + 1, args.end()), {"db", "config"}, {});
  if (!f.ok() || f->positional().size() != 1) {
    std::fprintf(stderr, "ellm store: %s\n%s",
                 f.ok() ? "give one backup file" : f.status().message().c_str(), kUsage);
    return 2;
  }
  Status s = [&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(std::string path, StorePath(*f));
    store::DatabaseOptions options;
    options.read_only = true;
    ELLM_ASSIGN_OR_RETURN(auto db, store::Database::Open(path, options));
    ELLM_RETURN_IF_ERROR(db->BackupTo(f->positional()[0]));
    std::printf("backed up %s to %s\n", path.c_str(), f->positional()[0].c_str());
    return OkStatus();
  }();
  if (!s.ok()) {
    std::fprintf(stderr, "ellm store: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

int Jobs(const Args& args) {
  constexpr const char* kUsage =
      "usage: ellm jobs list [--status queued|running|succeeded|failed] [--limit N] [--json]\n"
      "                      [--db PATH | --config FILE]\n"
      "       ellm jobs show ID [--json] [--db PATH | --config FILE]\n"
      "       ellm jobs prune [--older-than DAYS] [--db PATH | --config FILE]\n";
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  auto f = Flags::Parse(Args(args.begin() + 1, args.end()),
                        {"status", "limit", "db", "config", "older-than"}, {"json"});
  if (!f.ok()) {
    std::fprintf(stderr, "ellm jobs: %s\n%s", f.status().message().c_str(), kUsage);
    return 2;
  }
  if (args[0] == "list") return List(*f);
  if (args[0] == "show") return Show(*f);
  if (args[0] == "prune") return Prune(*f);
  std::fprintf(stderr, "ellm jobs: unknown subcommand '%s'\n%s", args[0].c_str(), kUsage);
  return 2;
}

}  // namespace ellm::cli
