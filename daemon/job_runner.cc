#include "job_runner.h"

#include "ellm/store/job_json.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <optional>

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
  // What was read how: each document's pages, and those read by OCR.
  if (!job.documents.empty()) {
    e["documents"] = json::array();
    for (const store::DocumentRecord& d : job.documents) {
      e["documents"].push_back(store::DocumentToJson(d));
    }
  }
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

StatusOr<std::string> KafkaResultPublisher::DeadLetter(const std::string& job_id,
                                                       const std::string& error_code,
                                                       const std::string& error_message) {
  // The original bytes, untouched, so the message can be fixed and replayed;
  // why it failed travels in headers (as Kafka Connect's dead-letter queues do).
  std::vector<std::pair<std::string, std::string>> headers = {
      {"ellm.job_id", job_id},
      {"ellm.error.code", error_code},
      {"ellm.error.message", error_message},
      {"ellm.source.topic", message_->topic},
      {"ellm.source.partition", std::to_string(message_->partition)},
      {"ellm.source.offset", std::to_string(message_->offset)},
  };
  // A copy the producer would refuse (larger than message.max.bytes, less
  // room for key and headers) becomes a reference to the original, which
  // stays on its topic while retention keeps it: the job must not be held
  // up by a copy that can never be sent.
  size_t overhead = message_->key.size() + 512;
  for (const auto& [k, v] : headers) overhead += k.size() + v.size() + 16;
  std::string payload = message_->payload;
  std::string where = dead_letter_topic_;
  if (payload.size() + overhead > max_message_bytes_) {
    payload = nlohmann::json{{"ellm_dead_letter_reference", 1},
                             {"job_id", job_id},
                             {"reason", "the original message (" +
                                            std::to_string(message_->payload.size()) +
                                            " bytes) is larger than the producer sends"},
                             {"original_bytes", message_->payload.size()},
                             {"source",
                              {{"topic", message_->topic},
                               {"partition", message_->partition},
                               {"offset", message_->offset}}}}
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    headers.emplace_back("ellm.payload", "reference");
    where += " (a reference: the original is too large)";
  }
  ELLM_RETURN_IF_ERROR(producer_->Produce(dead_letter_topic_, message_->key, payload, headers)
                           .WithContext("dead-letter topic '" + dead_letter_topic_ + "'"));
  if (atomic()) {
    ++uncommitted_dead_letters_;
  } else if (on_dead_letter_) {
    on_dead_letter_();
  }
  return where;
}

StatusOr<std::string> KafkaResultPublisher::Publish(const store::JobRecord& job) {
  std::string topic = job.reply_to.value_or(results_topic_);
  ELLM_RETURN_IF_ERROR(
      producer_->Produce(topic, job.id, ResultEventJson(job)).WithContext("topic '" + topic + "'"));
  if (after_publish_) after_publish_(job.id);
  return topic;
}

Status KafkaResultPublisher::Commit() {
  if (!atomic()) return OkStatus();
  if (group_ == nullptr)
    return FailedPreconditionError("no consumer group metadata to commit with");
  ELLM_RETURN_IF_ERROR(producer_->CommitTransaction(*message_, *group_));
  for (; uncommitted_dead_letters_ > 0; --uncommitted_dead_letters_) {
    if (on_dead_letter_) on_dead_letter_();
  }
  return OkStatus();
}

void KafkaResultPublisher::Abort() {
  uncommitted_dead_letters_ = 0;
  Status aborted = producer_->AbortTransaction();
  if (!aborted.ok()) spdlog::warn("kafka: {}", aborted.ToString());
}

std::unique_ptr<KafkaResultPublisher> JobRunner::Publisher(const ingest::KafkaMessage& message,
                                                           const ingest::GroupMetadata& group) {
  auto publisher = std::make_unique<KafkaResultPublisher>(
      producer_, &message, options_.results_topic, options_.dead_letter_topic,
      options_.max_message_bytes, options_.on_dead_letter, &group);
  if (!options_.signal_after_publish_job.empty()) {
    publisher->set_after_publish([this](const std::string& id) {
      if (id != options_.signal_after_publish_job || signalled_after_publish_) return;
      signalled_after_publish_ = true;
      const std::string& once = options_.signal_after_publish_once_file;
      if (!once.empty()) {
        const int fd = open(once.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) return;  // another process had its signal
        close(fd);
      }
      spdlog::warn("job={} ELLM_TEST_*_AFTER_PUBLISH: raising signal {} after its result event", id,
                   options_.signal_after_publish);
      raise(options_.signal_after_publish);
    });
  }
  return publisher;
}

HandleOutcome JobRunner::Done() const {
  return producer_->transactional() ? HandleOutcome::kCommitted : HandleOutcome::kCommit;
}

app::RunJobOptions JobRunner::RunOptions(app::ResultPublisher* publisher) const {
  app::RunJobOptions o;
  o.publisher = publisher;
  o.crash_after_store_commit = options_.crash_after_store_commit;
  o.crash_in_job = options_.crash_in_job;
  o.max_publish_attempts = options_.max_publish_attempts;
  o.retry_transient = true;  // the consumer delivers a kRetryLater message again
  o.status = options_.status;
  o.on_finished = options_.on_finished;
  o.on_result = options_.on_result;
  o.on_failure = options_.on_failure;
  o.progress = options_.progress;
  o.log = [](app::LogLevel level, const std::string& line) {
    switch (level) {
      case app::LogLevel::kDebug:
        spdlog::debug("{}", line);
        break;
      case app::LogLevel::kInfo:
        spdlog::info("{}", line);
        break;
      case app::LogLevel::kWarn:
        spdlog::warn("{}", line);
        break;
      case app::LogLevel::kError:
        spdlog::error("{}", line);
        break;
    }
  };
  return o;
}

HandleOutcome JobRunner::HandleInvalid(const ingest::KafkaMessage& message,
                                       const ingest::ParsedJob& parsed,
                                       const ingest::GroupMetadata& group) {
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
  if (*failed && options_.on_failure) options_.on_failure(job.pipeline, false);
  std::unique_ptr<KafkaResultPublisher> publisher = Publisher(message, group);
  if (!*failed) {
    // The id names a job that already finished: leave it as it is, but keep
    // a copy of the bad message (recorded once it is out: at once, or after
    // the commit of an atomic publisher).
    auto sent = store_->HasEvent(job.id, "dead_lettered");
    std::optional<std::string> where;
    if (sent.ok() && !*sent) {
      auto copied = publisher->DeadLetter(job.id, parsed.error_code, parsed.error);
      if (!copied.ok()) {
        publisher->Abort();
        return HandleOutcome::kRetryLater;
      }
      where = *copied;
    }
    if (where && !publisher->atomic() && !store_->AddEvent(job.id, "dead_lettered", *where).ok()) {
      return HandleOutcome::kRetryLater;
    }
    if (!publisher->Commit().ok()) return HandleOutcome::kRetryLater;
    if (where && publisher->atomic()) {
      Status st = store_->AddEvent(job.id, "dead_lettered", *where);
      if (!st.ok()) spdlog::warn("job={} {}", job.id, st.ToString());
    }
    return Done();
  }
  Status published = app::PublishFinished(*store_, job.id, *publisher, RunOptions(publisher.get()));
  return published.ok() ? Done() : HandleOutcome::kRetryLater;
}

void JobRunner::ReportProducerEvents() {
  for (; producer_restarts_seen_ < producer_->restarts(); ++producer_restarts_seen_) {
    if (options_.on_producer_replaced) options_.on_producer_replaced();
  }
  for (; aborted_transactions_seen_ < producer_->aborted_transactions();
       ++aborted_transactions_seen_) {
    if (options_.on_transaction_aborted) options_.on_transaction_aborted();
  }
}

HandleOutcome JobRunner::Handle(const ingest::KafkaMessage& message,
                                const ingest::GroupMetadata& group,
                                const std::atomic<bool>& cancel) {
  HandleOutcome outcome = HandleOne(message, group, cancel);
  ReportProducerEvents();
  return outcome;
}

HandleOutcome JobRunner::HandleOne(const ingest::KafkaMessage& message,
                                   const ingest::GroupMetadata& group,
                                   const std::atomic<bool>& cancel) {
  MaybeReload();
  ingest::ParsedJob parsed = ingest::ParseJobMessage(message.payload, message.key, options_.limits);
  if (!parsed.ok()) return HandleInvalid(message, parsed, group);
  const ingest::JobMessage& m = parsed.message;

  store::NewJob job{m.id,       m.pipeline,        m.params_json,
                    m.reply_to, SourceOf(message), options_.worker};
  // ParseJobMessage accepts only the names in limits.pipelines, which are
  // those of registry_.
  pipelines::Processor* processor = registry_->Find(m.pipeline);
  std::unique_ptr<KafkaResultPublisher> publisher = Publisher(message, group);
  std::unique_lock<std::mutex> one_job;
  if (options_.job_mutex != nullptr) one_job = std::unique_lock<std::mutex>(*options_.job_mutex);
  app::RunJobOptions run_options = RunOptions(publisher.get());
  app::JobTimeoutLimit limit = app::JobTimeout(options_.timeout_s, m.timeout_s);
  run_options.timeout = limit.seconds;
  run_options.timeout_source = limit.source;
  app::JobRun run =
      app::RunJob(*store_, *processor, job, app::ToPipelineRequest(m), cancel, run_options);
  return run.outcome == app::JobOutcome::kDone ? Done() : HandleOutcome::kRetryLater;
}

}  // namespace ellm::daemon
