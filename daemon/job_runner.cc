#include "job_runner.h"

#include "ellm/store/job_json.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace ellm::daemon {
namespace {

using ingest::HandleOutcome;
using json = nlohmann::json;

constexpr auto kReplace = json::error_handler_t::replace;

store::JobSource SourceOf(const ingest::KafkaMessage& m) {
  return {m.topic, m.partition, m.offset};
}

}  // namespace

std::string ResultEventJson(const store::JobRecord& job) {
  json e = {{"version", 1},
            {"id", job.id},
            {"status", std::string(store::JobStatusName(job.status))},
            {"pipeline", job.pipeline},
            {"attempts", job.attempts},
            {"finished_at", job.finished_at}};
  if (job.result) e["result"] = store::ResultToJson(*job.result);
  if (job.status == store::JobStatus::kFailed) {
    e["error"] = {{"code", job.error_code}, {"message", job.error_message}};
  }
  return e.dump(-1, ' ', false, kReplace);
}

JobRunner::JobRunner(store::JobStore* store, ingest::KafkaProducer* producer,
                     pipelines::ProcessorRegistry* registry, JobRunnerOptions options)
    : store_(store), producer_(producer), registry_(registry), options_(std::move(options)) {
  for (const std::string& name : registry_->Names()) options_.limits.pipelines.insert(name);
}

void JobRunner::MaybeReload() {
  if (!options_.reload_requested || !options_.reload_requested->exchange(false)) return;
  if (!options_.reload) return;
  auto fresh = options_.reload();
  if (!fresh.ok()) {
    spdlog::error("reload: keeping the current pipelines: {}", fresh.status().ToString());
    return;
  }
  reloaded_ = std::move(fresh).value();
  registry_ = reloaded_.get();
  options_.limits.pipelines.clear();
  std::string names;
  for (const std::string& name : registry_->Names()) {
    options_.limits.pipelines.insert(name);
    names += (names.empty() ? "" : ", ") + name;
  }
  spdlog::info("reload: pipelines now {}", names);
}

Status JobRunner::DeadLetter(const std::string& job_id, const ingest::KafkaMessage& message,
                             const std::string& code, const std::string& error) {
  // The original bytes, untouched, so the message can be fixed and replayed;
  // why it failed travels in headers (as Kafka Connect's dead-letter queues do).
  std::vector<std::pair<std::string, std::string>> headers = {
      {"ellm.job_id", job_id},
      {"ellm.error.code", code},
      {"ellm.error.message", error},
      {"ellm.source.topic", message.topic},
      {"ellm.source.partition", std::to_string(message.partition)},
      {"ellm.source.offset", std::to_string(message.offset)},
  };
  ELLM_RETURN_IF_ERROR(
      producer_->Produce(options_.dead_letter_topic, message.key, message.payload, headers));
  return store_->AddEvent(job_id, "dead_lettered", options_.dead_letter_topic);
}

HandleOutcome JobRunner::Finish(const std::string& job_id, const ingest::KafkaMessage& message) {
  auto job = store_->Get(job_id);
  if (!job.ok() || !job->has_value()) {
    spdlog::error("job={} cannot read it back: {}", job_id,
                  job.ok() ? "missing" : job.status().ToString());
    return HandleOutcome::kRetryLater;
  }
  const store::JobRecord& j = **job;
  if (j.status == store::JobStatus::kFailed) {
    auto sent = store_->HasEvent(job_id, "dead_lettered");
    if (!sent.ok()) return HandleOutcome::kRetryLater;
    if (!*sent) {
      Status st = DeadLetter(job_id, message, j.error_code, j.error_message);
      if (!st.ok()) {
        spdlog::warn("job={} dead-letter copy not sent yet: {}", job_id, st.ToString());
        return HandleOutcome::kRetryLater;
      }
    }
  }
  auto published = store_->HasEvent(job_id, "published");
  if (!published.ok()) return HandleOutcome::kRetryLater;
  if (!*published) {
    std::string topic = j.reply_to.value_or(options_.results_topic);
    Status st = producer_->Produce(topic, job_id, ResultEventJson(j));
    if (st.ok()) st = store_->AddEvent(job_id, "published", topic);
    if (!st.ok()) {
      spdlog::warn("job={} result event not published yet: {}", job_id, st.ToString());
      return HandleOutcome::kRetryLater;
    }
  }
  return HandleOutcome::kCommit;
}

HandleOutcome JobRunner::HandleInvalid(const ingest::KafkaMessage& message,
                                       const ingest::ParsedJob& parsed) {
  store::NewJob job;
  // A message without a usable id is filed under its position in the topic,
  // which is unique and stable across redeliveries.
  job.id = !parsed.message.id.empty()
               ? parsed.message.id
               : "invalid:" + message.topic + ":" + std::to_string(message.partition) + ":" +
                     std::to_string(message.offset);
  job.pipeline = parsed.message.pipeline;
  job.source = SourceOf(message);
  spdlog::warn("job={} rejected ({}): {}", job.id, parsed.error_code, parsed.error);
  auto failed = store_->Fail(job, parsed.error_code, parsed.error);
  if (!failed.ok()) {
    spdlog::error("job={} {}", job.id, failed.status().ToString());
    return HandleOutcome::kRetryLater;
  }
  if (!*failed) {
    // The id names a job that already finished: leave it as it is, but keep
    // a copy of the bad message.
    auto sent = store_->HasEvent(job.id, "dead_lettered");
    if (sent.ok() && !*sent) {
      Status st = DeadLetter(job.id, message, parsed.error_code, parsed.error);
      if (!st.ok()) return HandleOutcome::kRetryLater;
    }
    return HandleOutcome::kCommit;
  }
  return Finish(job.id, message);
}

HandleOutcome JobRunner::Handle(const ingest::KafkaMessage& message,
                                const std::atomic<bool>& cancel) {
  MaybeReload();
  ingest::ParsedJob parsed = ingest::ParseJobMessage(message.payload, message.key, options_.limits);
  if (!parsed.ok()) return HandleInvalid(message, parsed);
  const ingest::JobMessage& m = parsed.message;

  store::NewJob job{m.id,       m.pipeline,        m.params_json,
                    m.reply_to, SourceOf(message), options_.worker};
  auto begun = store_->Begin(job);
  if (!begun.ok()) {
    spdlog::error("job={} {}", m.id, begun.status().ToString());
    return HandleOutcome::kRetryLater;
  }
  switch (begun->decision) {
    case store::BeginDecision::kAlreadyDone:
      spdlog::info("job={} delivered again; already {}", m.id, store::JobStatusName(begun->status));
      return Finish(m.id, message);
    case store::BeginDecision::kGaveUp:
      spdlog::error("job={} failed: started {} times without finishing", m.id, begun->attempt);
      return Finish(m.id, message);
    case store::BeginDecision::kRun:
      break;
  }
  pipelines::Processor* processor = registry_->Find(m.pipeline);
  spdlog::info("job={} pipeline={} attempt={} documents={} from {}[{}]@{}", m.id, m.pipeline,
               begun->attempt, m.documents.size(), message.topic, message.partition,
               message.offset);
  if (options_.status) options_.status("running job " + m.id + " (" + m.pipeline + ")");
  auto started = std::chrono::steady_clock::now();
  pipelines::ProcessorResult result = processor->Run(m, cancel);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options_.status) options_.status("idle");
  if (!result.cancelled && options_.on_finished) {
    options_.on_finished(m.pipeline, result.output.has_value(), seconds);
  }
  if (result.output && options_.on_result) options_.on_result(result.output->result);
  if (result.cancelled) {
    spdlog::warn("job={} cancelled; it will run again", m.id);
    return HandleOutcome::kRetryLater;
  }
  if (result.output) {
    auto stored = store_->Succeed(m.id, result.output->documents, result.output->result);
    if (!stored.ok()) {
      spdlog::error("job={} {}", m.id, stored.status().ToString());
      return HandleOutcome::kRetryLater;
    }
    if (options_.crash_after_store_commit) {
      spdlog::warn("job={} ELLM_TEST_CRASH_AFTER_STORE: killing the process now", m.id);
      raise(SIGKILL);
    }
    spdlog::info("job={} succeeded: {}", m.id, result.output->result.output_text.substr(0, 200));
  } else {
    spdlog::warn("job={} failed ({}): {}", m.id, result.error_code, result.error);
    auto stored = store_->Fail(job, result.error_code, result.error);
    if (!stored.ok()) {
      spdlog::error("job={} {}", m.id, stored.status().ToString());
      return HandleOutcome::kRetryLater;
    }
  }
  return Finish(m.id, message);
}

}  // namespace ellm::daemon
