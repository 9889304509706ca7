// The time a pipeline spends outside the model's generations (extraction,
// chunking, token counting, the checks against the document), on one
// document, with the model's real tokenizer and a generator that answers at
// once (issue 39, item 4: this time grew faster than the document).
//
//   ellm_bench_pipeline_overhead MODEL.gguf DOCUMENT [--pipeline NAME]
//       [--replay LOG.jsonl] [--dump-prompts FILE] [--ctx N]
//
// Answers: with --replay, each generation's answers in turn from an
// `ellm summarize --log-prompts` log (result.sections), so the checks see
// what the model wrote; else a fixed sentence per section. --dump-prompts
// writes every prompt the pipeline renders, one JSON string a line (compare
// two builds' files: the same prompts mean the same generations). Prints
// the wall time of the run, the token counting's share, the generations
// asked for and their prompt tokens. A benchmark: it prints numbers.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"
#include "ellm/pipelines/generator.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/pipelines/pipeline_spec.h"

namespace ellm::pipelines {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class InstantGenerator : public TextGenerator {
 public:
  InstantGenerator(const Tokenizer& tok, int64_t context,
                   std::vector<std::vector<std::string>> replay)
      : tok_(tok), context_(context), replay_(std::move(replay)) {}

  int64_t CountTokens(const std::string& text) const override {
    const auto t0 = Clock::now();
    const auto n = static_cast<int64_t>(tok_.Encode(text, false, false).size());
    count_time += Clock::now() - t0;
    ++count_calls;
    count_bytes += static_cast<int64_t>(text.size());
    return n;
  }
  int64_t context() const override { return context_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  std::string model_name() const override { return "bench"; }
  std::string model_path() const override { return "bench.gguf"; }

  StatusOr<Generation> Generate(const std::string& system, const std::string& prompt,
                                PromptFormat format, const GenerationSettings& settings,
                                const std::atomic<bool>& cancel,
                                const ProgressFn& progress) override {
    return GenerateSections(system, prompt, format, settings, {{"", settings.max_tokens, {}}},
                            cancel, progress, {});
  }
  StatusOr<Generation> GenerateSections(const std::string& system, const std::string& prompt,
                                        PromptFormat, const GenerationSettings&,
                                        const std::vector<Section>& sections,
                                        const std::atomic<bool>&, const ProgressFn&,
                                        SharedPrefix) override {
    const auto t0 = Clock::now();
    const std::string text = system.empty() ? prompt : system + "\n\n" + prompt;
    if (dump != nullptr) *dump << nlohmann::json(text).dump() << "\n";
    Generation g;
    g.prompt_tokens = static_cast<int64_t>(tok_.Encode(text, true, false).size());
    const size_t k = calls++;
    for (size_t i = 0; i < sections.size(); ++i) {
      std::string a =
          " describes how SQLite commits a transaction atomically with a rollback "
          "journal, 512 bytes per sector.";
      if (!replay_.empty()) {
        a = k < replay_.size() && i < replay_[k].size() ? replay_[k][i] : "";
      }
      g.sections.push_back(a);
      g.text += sections[i].lead + a;
    }
    prompt_tokens += g.prompt_tokens;
    generate_time += Clock::now() - t0;
    return g;
  }

  mutable Clock::duration count_time{};
  mutable int64_t count_calls = 0, count_bytes = 0;
  Clock::duration generate_time{};
  size_t calls = 0;
  int64_t prompt_tokens = 0;
  std::ofstream* dump = nullptr;

 private:
  const Tokenizer& tok_;
  int64_t context_;
  std::vector<std::vector<std::string>> replay_;
  std::string fingerprint_ = "bench";
};

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s MODEL.gguf DOCUMENT [--pipeline NAME] [--replay LOG.jsonl] "
                 "[--dump-prompts FILE] [--ctx N]\n",
                 argv[0]);
    return 2;
  }
  std::string pipeline = "summarize-report", replay_path, dump_path;
  int64_t ctx = 32768;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--pipeline") pipeline = argv[i + 1];
    if (flag == "--replay") replay_path = argv[i + 1];
    if (flag == "--dump-prompts") dump_path = argv[i + 1];
    if (flag == "--ctx") ctx = std::stoll(argv[i + 1]);
  }
  auto file = gguf::GgufFile::Open(argv[1]);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
    return 1;
  }
  auto tok = Tokenizer::FromGguf(*file);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    return 1;
  }
  std::vector<std::vector<std::string>> replay;
  if (!replay_path.empty()) {
    std::ifstream in(replay_path);
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json r = nlohmann::json::parse(line);
      replay.push_back(r["result"]["sections"].get<std::vector<std::string>>());
    }
  }
  auto spec = LoadPipelineFile(DefaultPipelinesDir() + "/" + pipeline + ".yaml");
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().ToString().c_str());
    return 1;
  }
  InstantGenerator gen(**tok, ctx, std::move(replay));
  std::ofstream dump;
  if (!dump_path.empty()) {
    dump.open(dump_path, std::ios::trunc);
    gen.dump = &dump;
  }
  PipelineProcessor processor(*spec, &gen, {});
  PipelineRequest job;
  job.job_id = "bench";
  ingest::JobDocument doc;
  doc.path = argv[2];
  doc.resolved_path = std::filesystem::absolute(argv[2]).string();
  job.documents.push_back(doc);
  std::atomic<bool> cancel{false};
  const auto t0 = Clock::now();
  const std::clock_t cpu0 = std::clock();
  const PipelineResult r = processor.Run(job, cancel);
  const double total = Seconds(Clock::now() - t0);
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  if (!r.output) {
    std::fprintf(stderr, "%s: %s\n", r.error_code.c_str(), r.error.c_str());
    return 1;
  }
  std::printf(
      "%s: %.3f s outside the generations (%.3f s in all, %.3f s of CPU); counting tokens %.3f s "
      "(%lld calls, %.1f MB); %zu generations, %lld prompt tokens; %s\n",
      argv[2], total - Seconds(gen.generate_time), total, cpu, Seconds(gen.count_time),
      static_cast<long long>(gen.count_calls), static_cast<double>(gen.count_bytes) / 1e6,
      gen.calls, static_cast<long long>(gen.prompt_tokens), r.output->strategy.c_str());
  return 0;
}

}  // namespace
}  // namespace ellm::pipelines

int main(int argc, char** argv) { return ellm::pipelines::Main(argc, argv); }
