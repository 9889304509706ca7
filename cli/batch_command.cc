// ellm batch: a nightly run over a manifest of documents or document groups,
// run in order, resumable: every item is a job in the store with the id
// "batch:<manifest id>:<item id>", so a rerun after an interruption skips
// what already finished (succeeded or failed) and redoes the rest.
//
//   ellm batch MANIFEST [--pipeline P] [--model PATH] [--db PATH] [--config FILE]
//              [--pipelines DIR] [--ctx N] [--threads N] [--chat-template NAME]
//              [KV flags: kv_flags.h]
//
// Manifest, YAML:                       or CSV (header line required):
//   id: contracts-2026-11               id,pipeline,documents...
//   pipeline: compare-contracts         acme,compare-contracts,a.pdf,b.pdf
//   items:                              q3,summarize-report,q3.pdf
//     - id: acme
//       documents: [acme-2025.pdf, acme-2024.pdf]
//     - {id: q3, pipeline: summarize-report, documents: [q3.pdf]}
// Relative document paths are relative to the manifest's directory. The
// manifest id defaults to the file name without extension. A failed item
// stays failed on reruns (its error is in `ellm jobs show`); to run it again
// use a new manifest id. Exit code 0 when every item succeeded, 1 otherwise;
// one line per item on stdout.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "chat_template_flag.h"
#include "commands.h"
#include "ellm/app/run_job.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "flags.h"
#include "kv_flags.h"
#include "local_runtime.h"

namespace ellm::cli {
namespace {

namespace fs = std::filesystem;

struct Item {
  std::string id;
  std::string pipeline;
  std::vector<std::string> documents;
};

struct Manifest {
  std::string id;
  std::vector<Item> items;
};

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  cells.push_back(cell);
  return cells;
}

StatusOr<Manifest> ParseCsv(const std::string& path, const std::string& text,
                            const std::string& default_pipeline) {
  Manifest m;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1 || line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto cells = SplitCsvLine(line);
    if (cells.size() < 3) {
      return InvalidArgumentError("manifest " + path + ":" + std::to_string(n) +
                                  ": expected id,pipeline,document[,document...]");
    }
    Item item{cells[0], cells[1].empty() ? default_pipeline : cells[1], {}};
    for (size_t i = 2; i < cells.size(); ++i) {
      if (!cells[i].empty()) item.documents.push_back(cells[i]);
    }
    m.items.push_back(std::move(item));
  }
  return m;
}

StatusOr<Manifest> ParseYaml(const std::string& path, const std::string& text,
                             const std::string& default_pipeline) {
  Manifest m;
  auto at = [&](const YAML::Node& n, const std::string& what) {
    return InvalidArgumentError("manifest " + path + ":" + std::to_string(n.Mark().line + 1) +
                                ": " + what);
  };
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return at(root, "expected a mapping with 'items'");
    if (root["id"]) m.id = root["id"].as<std::string>();
    std::string pipeline = root["pipeline"] ? root["pipeline"].as<std::string>() : default_pipeline;
    YAML::Node items = root["items"];
    if (!items || !items.IsSequence()) return at(root, "'items' must be a list");
    for (const YAML::Node& n : items) {
      if (!n.IsMap() || !n["id"] || !n["documents"] || !n["documents"].IsSequence()) {
        return at(n, "each item needs 'id' and a 'documents' list");
      }
      Item item{n["id"].as<std::string>(),
                n["pipeline"] ? n["pipeline"].as<std::string>() : pipeline,
                n["documents"].as<std::vector<std::string>>()};
      m.items.push_back(std::move(item));
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("manifest " + path + ":" + std::to_string(e.mark.line + 1) + ": " +
                                e.msg);
  }
  return m;
}

StatusOr<Manifest> LoadManifest(const std::string& path, const std::string& default_pipeline) {
  ELLM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string ext = fs::path(path).extension().string();
  ELLM_ASSIGN_OR_RETURN(Manifest m, ext == ".csv" ? ParseCsv(path, text, default_pipeline)
                                                  : ParseYaml(path, text, default_pipeline));
  if (m.id.empty()) m.id = fs::path(path).stem().string();
  static const std::regex kId("[A-Za-z0-9._-]{1,80}");
  if (!std::regex_match(m.id, kId)) {
    return InvalidArgumentError("manifest " + path + ": id '" + m.id +
                                "' must be 1-80 characters [A-Za-z0-9._-]");
  }
  fs::path base = fs::path(path).parent_path();
  std::set<std::string> seen;
  for (Item& item : m.items) {
    if (!std::regex_match(item.id, kId) || !seen.insert(item.id).second) {
      return InvalidArgumentError("manifest " + path + ": item id '" + item.id +
                                  "' must be unique and 1-80 characters [A-Za-z0-9._-]");
    }
    if (item.documents.empty()) {
      return InvalidArgumentError("manifest " + path + ": item '" + item.id + "' has no documents");
    }
    for (std::string& d : item.documents) {
      if (fs::path(d).is_relative()) d = (base / d).string();
    }
  }
  return m;
}

// The processor of an item whose documents cannot be found: it fails the
// item with the reason, as a pipeline fails a bad document.
class UnreadableDocuments : public pipelines::Processor {
 public:
  UnreadableDocuments(std::string pipeline, Status why)
      : name_(std::move(pipeline)), why_(std::move(why)) {}
  const std::string& name() const override { return name_; }
  const std::string& version() const override { return version_; }
  pipelines::PipelineResult Run(const pipelines::PipelineRequest&,
                                const std::atomic<bool>&) override {
    return pipelines::PipelineResult::Failed("document_not_found", why_.message());
  }

 private:
  std::string name_;
  std::string version_;
  Status why_;
};

Status Run(const Flags& f, int* failures) {
  if (f.positional().size() != 1) return InvalidArgumentError("give one manifest file");
  ELLM_ASSIGN_OR_RETURN(Manifest m,
                        LoadManifest(f.positional()[0], f.Get("pipeline", "compare-contracts")));
  std::vector<std::string> names;
  for (const Item& item : m.items) names.push_back(item.pipeline);
  ELLM_ASSIGN_OR_RETURN(auto rt, OpenLocalRuntime(f, names));
  // Every item is checked (pipeline known) before the first one runs.
  for (const Item& item : m.items) ELLM_RETURN_IF_ERROR(rt->Find(item.pipeline).status());
  ProgressLine line(isatty(2));
  int done = 0, skipped = 0;
  for (size_t i = 0; i < m.items.size(); ++i) {
    const Item& item = m.items[i];
    std::string id = "batch:" + m.id + ":" + item.id;
    ELLM_ASSIGN_OR_RETURN(pipelines::Processor * processor, rt->Find(item.pipeline));
    processor->set_progress([&](const pipelines::Progress& p) { line.Update(p); });
    store::NewJob nj{id,
                     item.pipeline,
                     "{}",
                     std::nullopt,
                     {"batch:" + m.id, -1, int64_t(i)},
                     "ellm-batch/" + std::to_string(getpid())};
    pipelines::PipelineRequest job;
    job.job_id = id;
    // A document that cannot be found fails its item (after Begin, so that a
    // finished item is skipped even when its documents are gone).
    auto docs = LocalDocuments(item.documents);
    UnreadableDocuments unreadable(item.pipeline, docs.status());
    if (docs.ok()) job.documents = *docs;
    std::atomic<bool> cancel{false};
    app::JobRun run =
        app::RunJob(*rt->store, docs.ok() ? *processor : unreadable, nj, job, cancel, {});
    line.Clear();
    ELLM_RETURN_IF_ERROR(run.error);
    if (!run.ran) {
      ++skipped;
      if (run.status == store::JobStatus::kFailed) ++*failures;
      std::printf("%-40s %s (already)\n", id.c_str(),
                  std::string(store::JobStatusName(run.status)).c_str());
      continue;
    }
    const pipelines::PipelineResult& r = run.result;
    if (r.output) {
      ++done;
      std::printf("%-40s succeeded (%s, %lld+%lld tokens)\n", id.c_str(),
                  r.output->strategy.c_str(), static_cast<long long>(r.output->prompt_tokens),
                  static_cast<long long>(r.output->generated_tokens));
    } else {
      ++*failures;
      std::printf("%-40s failed: %s: %s\n", id.c_str(), r.error_code.c_str(), r.error.c_str());
    }
    std::fflush(stdout);
  }
  std::fprintf(stderr, "batch %s: %d run, %d already done, %d failed; results in %s\n",
               m.id.c_str(), done, skipped, *failures, rt->store_path.c_str());
  return OkStatus();
}

}  // namespace

int Batch(const Args& args) {
  std::set<std::string> names = {"pipeline",  "model", "db",      "config",
                                 "pipelines", "ctx",   "threads", kChatTemplateFlag};
  for (const std::string& n : KvFlagNames()) names.insert(n);
  auto flags = Flags::Parse(args, names, {});
  if (!flags.ok()) {
    std::fprintf(stderr,
                 "ellm batch: %s\nusage: ellm batch MANIFEST [--pipeline P] [--model PATH] "
                 "[--db PATH] [--config FILE] [--pipelines DIR] [--ctx N] [--threads N]\n"
                 "                  [--chat-template gemma|llama3|chatml] [KV flags: ellm help "
                 "bench]\n",
                 flags.status().message().c_str());
    return 2;
  }
  int failures = 0;
  Status s = Run(*flags, &failures);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm batch: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return failures > 0 ? 1 : 0;
}

}  // namespace ellm::cli
