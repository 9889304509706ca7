// ellm summarize / ellm compare: run a pipeline on local files, no Kafka.
//   ellm summarize FILE... [--pipeline P] [--model PATH] [--db PATH] [--json]
//                  [--config FILE] [--pipelines DIR] [--ctx N] [--threads N]
//                  [--params JSON] [--chat-template NAME] [--log-prompts FILE]
//                  [KV flags: kv_flags.h, over the config's model: section]
//   ellm compare A B [...same options; --pipeline defaults to compare-contracts]
// The result is printed and stored as a job in SQLite (--db, else the
// config's store.path, else $XDG_DATA_HOME/ellm/ellm.db). On a terminal a
// progress line with ETA shows extraction, map steps, prefill and generation.
// --log-prompts FILE writes each generation the run makes as one JSON line
// (rendered prompt, its token ids, leads, limits, stops, the answer and its
// time), so that another engine can repeat the same work
// (bench/docs_per_hour.py runs it through llama.cpp).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "chat_template_flag.h"
#include "commands.h"
#include "ellm/app/config.h"
#include "ellm/app/run_job.h"
#include "ellm/base/json.h"
#include "ellm/ingest/extract.h"
#include "ellm/pipelines/contracts.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/store/job_store.h"
#include "flags.h"
#include "kv_flags.h"
#include "local_runtime.h"

namespace ellm::cli {
namespace {

nlohmann::json PromptRecordJson(const pipelines::PromptRecord& r) {
  nlohmann::json sections = nlohmann::json::array();
  for (size_t i = 0; i < r.sections.size(); ++i) {
    sections.push_back({{"lead", r.sections[i].lead},
                        {"lead_ids", r.lead_ids[i]},
                        {"max_tokens", r.sections[i].max_tokens},
                        {"stop", r.sections[i].stop},
                        {"from_prompt", r.sections[i].from_prompt}});
  }
  const pipelines::GenerationSettings& g = r.settings;
  return {{"text", r.text},
          {"chat", r.chat},
          {"ids", r.ids},
          {"sections", sections},
          {"settings",
           {{"max_tokens", g.max_tokens},
            {"temperature", g.temperature},
            {"top_p", g.top_p},
            {"top_k", g.top_k},
            {"repeat_penalty", g.repeat_penalty},
            {"stop_on_repeated_line", g.stop_on_repeated_line},
            {"stop", g.stop},
            {"json_schema", g.json_schema}}},
          {"result",
           {{"text", r.result.text},
            {"sections", r.result.sections},
            {"prompt_tokens", r.result.prompt_tokens},
            {"generated_tokens", r.result.generated_tokens},
            {"prefill_ms", r.result.prefill_ms},
            {"decode_ms", r.result.decode_ms}}},
          {"seconds", r.seconds}};
}

// --html FILE: the clause comparison of a two-document result as a
// self-contained page (pipelines/contracts.h ComparisonHtml).
Status WriteHtmlReport(const std::string& path, const pipelines::PipelineOutput& res,
                       const std::vector<std::string>& files) {
  StatusOr<nlohmann::ordered_json> parsed =
      res.output_json ? ParseOrderedJson(*res.output_json)
                      : StatusOr<nlohmann::ordered_json>(InvalidArgumentError("no JSON"));
  if (!parsed.ok() || !parsed->contains("clauses") || files.size() != 2) {
    return InvalidArgumentError("--html: the result of pipeline '" + res.pipeline_name +
                                "' has no clause comparison (compare two contracts)");
  }
  std::string html;
  try {
    html = pipelines::ComparisonHtml((*parsed)["clauses"],
                                     std::filesystem::path(files[0]).filename().string(),
                                     std::filesystem::path(files[1]).filename().string());
  } catch (const nlohmann::json::exception& e) {
    return InternalError(std::string("--html: ") + e.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return ErrnoError(errno, "--html '" + path + "'");
  out << html;
  out.close();
  if (!out) return ErrnoError(errno, "--html '" + path + "'");
  return OkStatus();
}

// ellm compare BASE AMENDMENT... --no-model: each version with the next
// (key terms and clauses, as for two files), then every clause's history
// through the versions.
Status RunChain(const Flags& f, const std::vector<std::string>& files,
                const std::vector<std::vector<pipelines::Page>>& pages,
                std::chrono::steady_clock::time_point started) {
  std::vector<pipelines::ContractComparison> steps;
  std::vector<std::string> names;
  for (const std::string& file : files) {
    names.push_back(std::filesystem::path(file).filename().string());
  }
  for (size_t i = 0; i + 1 < pages.size(); ++i) {
    steps.push_back(pipelines::CompareContracts(pages[i], pages[i + 1]));
  }
  const auto histories = pipelines::ClauseHistories(steps);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (f.Has("json")) {
    nlohmann::ordered_json out = {{"documents", names}, {"steps", nlohmann::ordered_json::array()}};
    for (size_t i = 0; i < steps.size(); ++i) {
      out["steps"].push_back(
          {{"documents", {{"A", names[i]}, {"B", names[i + 1]}}},
           {"comparison", pipelines::KeyTermsJson(pipelines::KeyTermsView(steps[i]))},
           {"clauses", pipelines::ComparisonJson(steps[i])}});
    }
    out["history"] = pipelines::HistoryJson(steps, histories);
    out["seconds"] = seconds;
    std::cout << out.dump(2) << "\n";
  } else {
    for (size_t i = 0; i < steps.size(); ++i) {
      std::cout << "# " << names[i] << " \u2192 " << names[i + 1] << "\n\n## Key terms compared\n\n"
                << pipelines::KeyTermsMarkdown(pipelines::KeyTermsView(steps[i]))
                << "\n## Clauses compared\n\n"
                << pipelines::ComparisonMarkdown(steps[i]) << "\n";
    }
    std::cout << "# Clause history\n\n" << pipelines::HistoryMarkdown(steps, histories, names);
  }
  std::cout.flush();  // the report before the timing line, also through 2>&1
  std::fprintf(stderr, "compare --no-model: %zu versions; %.2f s\n", files.size(), seconds);
  return OkStatus();
}

// ellm compare A B --no-model: the key terms and the clause comparison
// alone (no model, no store): what the pipeline computes before the model
// writes its prose, in a fraction of the time.
Status RunWithoutModel(const Flags& f) {
  const auto& files = f.positional();
  if (files.size() < 2) return InvalidArgumentError("--no-model compares two files or more");
  if (files.size() > 2 && f.Has("html")) {
    return InvalidArgumentError("--html shows one comparison: give two files");
  }
  const auto started = std::chrono::steady_clock::now();
  ingest::ExtractOptions options;
  if (f.Has("config")) {
    ELLM_ASSIGN_OR_RETURN(app::Config config, app::LoadConfig(f.Get("config")));
    options = config.extract;
  }
  std::vector<std::vector<pipelines::Page>> pages;
  std::vector<std::string> titles;
  for (const std::string& file : files) {
    StatusOr<ingest::Document> doc = ingest::ExtractDocument(file, options);
    if (!doc.ok()) return doc.status().WithContext("document '" + file + "'");
    pages.push_back(pipelines::SplitPages(ingest::RenderForModel(*doc)));
    titles.push_back(doc->metadata.title);
  }
  if (files.size() > 2) return RunChain(f, files, pages, started);
  const pipelines::ContractComparison c = pipelines::CompareContracts(pages[0], pages[1]);
  const nlohmann::ordered_json clauses = pipelines::ComparisonJson(c);
  const std::vector<pipelines::KeyTermRow> terms = pipelines::KeyTermsView(c);
  const std::string name_a = std::filesystem::path(files[0]).filename().string();
  const std::string name_b = std::filesystem::path(files[1]).filename().string();
  if (f.Has("html")) {
    std::ofstream out(f.Get("html"), std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoError(errno, "--html '" + f.Get("html") + "'");
    out << pipelines::ComparisonHtml(clauses, name_a, name_b);
    out.close();
    if (!out) return ErrnoError(errno, "--html '" + f.Get("html") + "'");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (f.Has("json")) {
    nlohmann::ordered_json out = {{"documents", {{"A", name_a}, {"B", name_b}}},
                                  {"comparison", pipelines::KeyTermsJson(terms)},
                                  {"clauses", clauses},
                                  {"seconds", seconds}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "A: " << name_a << " (" << titles[0] << ")\nB: " << name_b << " (" << titles[1]
              << ")\n\n## Key terms compared\n\n"
              << pipelines::KeyTermsMarkdown(terms) << "\n## Clauses compared\n\n"
              << pipelines::ComparisonMarkdown(c);
  }
  std::cout.flush();
  std::fprintf(stderr, "compare --no-model: %zu and %zu clauses; %.2f s\n", c.a.size(), c.b.size(),
               seconds);
  return OkStatus();
}

Status Run(const Flags& f, const std::string& default_pipeline, int min_files) {
  if (f.Has("no-model")) {
    if (min_files != 2) return InvalidArgumentError("--no-model is for ellm compare");
    return RunWithoutModel(f);
  }
  const auto& files = f.positional();
  if (static_cast<int>(files.size()) < min_files) {
    return InvalidArgumentError("give at least " + std::to_string(min_files) + " file(s)");
  }
  std::string pipeline = f.Get("pipeline", default_pipeline);
  pipelines::PipelineRequest job;
  if (f.Has("params")) {
    // As a Kafka job's "params": the prompt's {{params.*}} and per-job
    // settings such as single_pass_max_tokens.
    StatusOr<nlohmann::json> p = ParseJson(f.Get("params", ""));
    if (!p.ok()) return p.status().WithContext("--params");
    if (!p->is_object()) return InvalidArgumentError("--params must be a JSON object");
    job.params_json = p->dump();
  }
  ELLM_ASSIGN_OR_RETURN(job.documents, LocalDocuments(files));
  ELLM_ASSIGN_OR_RETURN(auto rt, OpenLocalRuntime(f, {pipeline}));
  ELLM_ASSIGN_OR_RETURN(pipelines::Processor * processor, rt->Find(pipeline));
  std::ofstream prompt_log;
  if (f.Has("log-prompts")) {
    const std::string path = f.Get("log-prompts");
    prompt_log.open(path, std::ios::trunc);
    if (!prompt_log) return ErrnoError(errno, "--log-prompts '" + path + "'");
    if (rt->generator) {
      rt->generator->set_prompt_log([&prompt_log](const pipelines::PromptRecord& r) {
        // Answers cut mid-character would not be valid UTF-8: replaced, not thrown.
        prompt_log << PromptRecordJson(r).dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace)
                   << "\n";
        prompt_log.flush();
      });
    }
  }
  const std::string& db = rt->store_path;
  ProgressLine line(isatty(2) && !f.Has("json"));
  processor->set_progress([&](const pipelines::Progress& p) { line.Update(p); });

  job.job_id = "cli-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  store::NewJob nj{job.job_id,   pipeline,        job.params_json,
                   std::nullopt, {"cli", -1, -1}, "ellm/" + std::to_string(getpid())};
  std::atomic<bool> cancel{false};
  app::JobRun run = app::RunJob(*rt->store, *processor, nj, job, cancel, {});
  line.Clear();
  if (rt->generator) rt->generator->set_prompt_log(nullptr);
  const pipelines::PipelineResult& r = run.result;
  if (run.ran && !r.output && !r.cancelled) {
    return Status(StatusCode::kFailedPrecondition, r.error_code + ": " + r.ErrorWithAnswer());
  }
  ELLM_RETURN_IF_ERROR(run.error);
  if (!run.ran || !r.output) {
    return InternalError("job " + job.job_id + " did not run (" +
                         std::string(store::JobStatusName(run.status)) + ")");
  }
  const double seconds = run.seconds;
  const pipelines::PipelineOutput& res = *r.output;
  if (f.Has("html")) ELLM_RETURN_IF_ERROR(WriteHtmlReport(f.Get("html"), res, files));
  if (f.Has("json")) {
    nlohmann::json out = {{"id", job.job_id},
                          {"pipeline", pipeline},
                          {"text", res.output_text},
                          {"strategy", res.strategy},
                          {"prompt_tokens", res.prompt_tokens},
                          {"generated_tokens", res.generated_tokens},
                          {"prefill_ms", res.prefill_ms},
                          {"decode_ms", res.decode_ms},
                          {"constraint_ms", res.constraint_ms},
                          {"seconds", seconds},
                          {"store", db}};
    AddAttentionSettings(rt->config.model.session, &out);
    if (res.output_json) {
      // The pipeline checked it; shown as text should it not parse.
      StatusOr<nlohmann::json> parsed = ParseJson(*res.output_json);
      out["json"] = parsed.ok() ? std::move(*parsed) : nlohmann::json(*res.output_json);
    }
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << res.output_text << "\n";
  }
  std::cout.flush();
  std::fprintf(
      stderr,
      "%s: %s; %lld prompt tokens (prefill %.1f s), %lld generated (%.1f s); %.1f s "
      "in all; stored as job %s in %s\n",
      pipeline.c_str(), res.strategy.c_str(), static_cast<long long>(res.prompt_tokens),
      static_cast<double>(res.prefill_ms) / 1000.0, static_cast<long long>(res.generated_tokens),
      static_cast<double>(res.decode_ms) / 1000.0, seconds, job.job_id.c_str(), db.c_str());
  return OkStatus();
}

int Main(const Args& args, const char* name, const std::string& default_pipeline, int min_files) {
  std::set<std::string> names = {
      "pipeline", "model",  "db",          "config", "pipelines",      "ctx",
      "threads",  "params", "log-prompts", "html",   kChatTemplateFlag};
  for (const std::string& n : KvFlagNames()) names.insert(n);
  auto flags = Flags::Parse(args, names, {"json", "no-model"});
  if (!flags.ok()) {
    std::fprintf(
        stderr,
        "ellm %s: %s\nusage: ellm %s FILE... [--pipeline P] [--model PATH] [--db PATH] "
        "[--json] [--config FILE] [--pipelines DIR] [--ctx N] [--threads N] "
        "[--params JSON] [--chat-template gemma|llama3|chatml] "
        "[--log-prompts FILE] [--html FILE, --no-model (compare)] [KV flags: ellm help bench]\n",
        name, flags.status().message().c_str(), name);
    return 2;
  }
  Status s = Run(*flags, default_pipeline, min_files);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm %s: %s\n", name, s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace

int Summarize(const Args& args) { return Main(args, "summarize", "summarize-report", 1); }
int Compare(const Args& args) { return Main(args, "compare", "compare-contracts", 2); }

}  // namespace ellm::cli
