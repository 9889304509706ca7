#include "ellm/ingest/job_consumer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace ellm::ingest {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Where(const KafkaMessage& m) {
  return m.topic + "[" + std::to_string(m.partition) + "]@" + std::to_string(m.offset);
}

bool Contains(const std::vector<TopicPartition>& v, const TopicPartition& tp) {
  return std::find(v.begin(), v.end(), tp) != v.end();
}

}  // namespace

StatusOr<std::unique_ptr<JobConsumer>> JobConsumer::Create(const JobConsumerOptions& options,
                                                           JobHandler* handler) {
  if (!handler) return InvalidArgumentError("JobConsumer needs a handler");
  std::unique_ptr<JobConsumer> jc(new JobConsumer(options, handler));
  ELLM_ASSIGN_OR_RETURN(jc->consumer_, KafkaConsumer::Create(options.kafka, options.group_id,
                                                             {options.jobs_topic}, jc.get()));
  return jc;
}

JobConsumer::~JobConsumer() {
  if (consumer_) (void)consumer_->Close();
}

bool JobConsumer::OnAssigned(const std::vector<TopicPartition>& partitions) {
  std::string names;
  for (const auto& p : partitions) names += (names.empty() ? "" : " ") + p.ToString();
  spdlog::info("kafka: assigned {}", names.empty() ? "(nothing)" : names);
  Consuming(partitions.empty() ? "no partitions assigned" : "");
  if (job_active_ && revoke_pending_) {
    revoke_pending_ = false;
    if (!Contains(partitions, job_partition_)) {
      spdlog::warn("kafka: {} moved to another member while its job ran; abandoning the job",
                   job_partition_.ToString());
      cancel_ = true;
      ++stats_.abandoned;
    }
  }
  return paused_;  // a new assignment joins the pause until the consumer is idle
}

void JobConsumer::DropHeld(const TopicPartition& tp) {
  std::erase_if(held_, [&](const KafkaMessage& m) {
    return m.topic == tp.topic && m.partition == tp.partition;
  });
}

void JobConsumer::OnRevoked(const std::vector<TopicPartition>& partitions, bool lost) {
  spdlog::info("kafka: {} {} partition(s)", lost ? "lost" : "revoked", partitions.size());
  Consuming(lost ? "partitions lost (the broker or the group coordinator is away, or the "
                   "session timed out)"
                 : "rebalancing");
  // Held messages of these partitions are not ours to run any more; the next
  // owner fetches them from the committed offset.
  for (const auto& tp : partitions) DropHeld(tp);
  if (!job_active_ || !Contains(partitions, job_partition_)) return;
  if (lost) {
    spdlog::warn("kafka: lost {} while its job ran; abandoning the job", job_partition_.ToString());
    cancel_ = true;
    ++stats_.abandoned;
  } else {
    revoke_pending_ = true;  // decided when the new assignment arrives
  }
}

bool JobConsumer::Owns(const TopicPartition& tp) {
  auto a = consumer_->Assignment();
  return a.ok() && Contains(*a, tp);
}

Status JobConsumer::PauseAll() {
  ELLM_ASSIGN_OR_RETURN(auto parts, consumer_->Assignment());
  return parts.empty() ? OkStatus() : consumer_->Pause(parts);
}

Status JobConsumer::ResumeAll() {
  ELLM_ASSIGN_OR_RETURN(auto parts, consumer_->Assignment());
  return parts.empty() ? OkStatus() : consumer_->Resume(parts);
}

void JobConsumer::Consuming(const std::string& why_not) {
  if (options_.on_consuming) options_.on_consuming(why_not);
}

void JobConsumer::Tick() {
  if (options_.tick) options_.tick();
  if (options_.on_lag && Clock::now() - last_lag_report_ > std::chrono::seconds(5)) {
    last_lag_report_ = Clock::now();
    options_.on_lag(consumer_->Lag());
  }
}

milliseconds JobConsumer::NextBackoff() {
  int shift = std::min(consecutive_retries_, 16);
  auto b = options_.retry_backoff_initial * (int64_t{1} << shift);
  return std::min<milliseconds>(b, options_.retry_backoff_max);
}

void JobConsumer::LogUnavailable(const Status& status) {
  if (Clock::now() - last_unavailable_log_ > std::chrono::seconds(30)) {
    spdlog::warn("{} (retrying)", status.message());
    last_unavailable_log_ = Clock::now();
  }
}

Status JobConsumer::PollOnce(milliseconds timeout) {
  auto m = consumer_->Poll(timeout);
  if (!m.ok()) {
    if (m.status().code() != StatusCode::kUnavailable) return m.status();
    LogUnavailable(m.status());
    return OkStatus();
  }
  if (m->has_value()) {
    spdlog::debug("kafka: {} arrived while busy; held", Where(**m));
    held_.push_back(std::move(**m));
  }
  return OkStatus();
}

Status JobConsumer::Serve(milliseconds duration, const std::atomic<bool>* until) {
  auto deadline = Clock::now() + duration;
  do {
    // Short polls early in a job, so that a quick job is noticed quickly.
    bool early = job_active_ && Clock::now() - job_started_ < options_.pause_after;
    Tick();
    ELLM_RETURN_IF_ERROR(PollOnce(early ? std::min(options_.poll_timeout, milliseconds(10))
                                        : options_.poll_timeout));
    if (job_active_ && !paused_ && Clock::now() - job_started_ >= options_.pause_after) {
      ELLM_RETURN_IF_ERROR(PauseAll());
      paused_ = true;
      spdlog::debug("kafka: paused while a long job runs");
    }
  } while (Clock::now() < deadline && !(until && until->load()));
  return OkStatus();
}

Status JobConsumer::CommitWithRetry(const KafkaMessage& message, const std::atomic<bool>& stop) {
  int failures = 0;
  auto give_up_at = Clock::time_point::max();
  for (;;) {
    TopicPartition tp{message.topic, message.partition};
    if (!Owns(tp)) {
      spdlog::info("kafka: {} is no longer ours; its new owner will see the job done",
                   Where(message));
      return OkStatus();
    }
    Status st = consumer_->Commit(message);
    if (st.ok()) {
      ++stats_.committed;
      return OkStatus();
    }
    if (stop.load() && give_up_at == Clock::time_point::max()) {
      give_up_at = Clock::now() + options_.shutdown_grace;
    }
    if (Clock::now() > give_up_at) {
      spdlog::warn(
          "kafka: shutting down with {} uncommitted (the job is stored; a redelivery "
          "will be recognised as done): {}",
          Where(message), st.message());
      return OkStatus();
    }
    auto wait = std::min<milliseconds>(
        options_.retry_backoff_initial * (1 << std::min(failures, 6)), options_.retry_backoff_max);
    ++failures;
    spdlog::warn("kafka: commit of {} failed, retrying in {} ms: {}", Where(message), wait.count(),
                 st.message());
    ELLM_RETURN_IF_ERROR(Serve(wait));
  }
}

StatusOr<bool> JobConsumer::CommittedMeanwhile(const KafkaMessage& message) {
  TopicPartition tp{message.topic, message.partition};
  if (!handed_back_ || handed_back_->first != tp || handed_back_->second != message.offset) {
    return false;
  }
  ELLM_ASSIGN_OR_RETURN(int64_t committed, consumer_->Committed(tp, std::chrono::seconds(10)));
  handed_back_.reset();
  return committed > message.offset;
}

Status JobConsumer::HandBack(const KafkaMessage& message, const std::atomic<bool>& stop) {
  TopicPartition tp{message.topic, message.partition};
  ++stats_.retried;
  if (options_.on_retry) options_.on_retry();
  // Everything after this message in its partition comes again after it.
  DropHeld(tp);
  handed_back_.emplace(tp, message.offset);
  ELLM_RETURN_IF_ERROR(RewindOwned(message));
  if (!stop.load()) {
    auto wait = NextBackoff();
    ++consecutive_retries_;
    spdlog::info("kafka: {} will be delivered again in {} ms", Where(message), wait.count());
    ELLM_RETURN_IF_ERROR(Serve(wait, &stop));
  }
  return OkStatus();
}

Status JobConsumer::RewindOwned(const KafkaMessage& message) {
  const TopicPartition tp{message.topic, message.partition};
  const auto give_up_at = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    // Not ours: its next owner starts from the committed offset, before it.
    if (!Owns(tp)) return OkStatus();
    Status st = consumer_->Rewind(message);
    if (st.code() != StatusCode::kFailedPrecondition || Clock::now() > give_up_at) return st;
    spdlog::info("kafka: {} was assigned again meanwhile; rewinding once it is fetching",
                 Where(message));
    ELLM_RETURN_IF_ERROR(Serve(milliseconds(100)));
    // What the poll fetched from the new assignment comes again after the rewind.
    DropHeld(tp);
  }
}

Status JobConsumer::RunOne(const KafkaMessage& message, const std::atomic<bool>& stop) {
  auto committed = CommittedMeanwhile(message);
  if (!committed.ok()) {
    spdlog::warn("kafka: {} comes again, but whether it was committed meanwhile is unknown: {}",
                 Where(message), committed.status().ToString());
    return HandBack(message, stop);
  }
  if (*committed) {
    spdlog::info("kafka: {} was committed by an earlier transaction after all; not run again",
                 Where(message));
    return OkStatus();
  }
  // Taken before the job starts: see "Transactions" in job_consumer.h.
  const GroupMetadata group = consumer_->Membership();
  job_active_ = true;
  job_partition_ = {message.topic, message.partition};
  revoke_pending_ = false;
  cancel_ = false;
  job_started_ = Clock::now();

  auto started = Clock::now();
  std::atomic<bool> done{false};
  HandleOutcome outcome = HandleOutcome::kRetryLater;
  std::thread worker([&] {
    outcome = handler_->Handle(message, group, cancel_);
    done = true;
  });
  auto grace_end = Clock::time_point::max();
  Status served;
  while (!done.load()) {
    served = Serve(options_.poll_timeout * 5, &done);
    if (!served.ok()) break;
    if (stop.load() && grace_end == Clock::time_point::max()) {
      grace_end = Clock::now() + options_.shutdown_grace;
      spdlog::info("kafka: stopping; giving the running job {} ms to finish",
                   options_.shutdown_grace.count());
    }
    if (Clock::now() > grace_end && !cancel_.load()) {
      spdlog::warn(
          "kafka: the job from {} did not finish within the grace period; cancelling "
          "it (it stays uncommitted and runs again later)",
          Where(message));
      cancel_ = true;
    }
  }
  if (!served.ok()) cancel_ = true;  // fatal client error: stop the job too
  worker.join();
  job_active_ = false;
  ELLM_RETURN_IF_ERROR(served);

  auto handled = Clock::now();
  spdlog::debug("kafka: {} handled in {} ms", Where(message),
                std::chrono::duration_cast<milliseconds>(handled - started).count());
  if (outcome == HandleOutcome::kCommit) {
    consecutive_retries_ = 0;
    ELLM_RETURN_IF_ERROR(CommitWithRetry(message, stop));
    spdlog::debug("kafka: {} committed in {} ms", Where(message),
                  std::chrono::duration_cast<milliseconds>(Clock::now() - handled).count());
  } else if (outcome == HandleOutcome::kCommitted) {
    consecutive_retries_ = 0;
    ++stats_.committed;
  } else {
    ELLM_RETURN_IF_ERROR(HandBack(message, stop));
  }
  return OkStatus();
}

Status JobConsumer::Step(const std::atomic<bool>& stop) {
  if (!held_.empty()) {
    // What librdkafka has queued comes first: a partition lost or revoked
    // meanwhile (a broker outage longer than the session) drops its held
    // messages, so no job starts for a partition this member lost.
    ELLM_RETURN_IF_ERROR(PollOnce(milliseconds(0)));
    if (held_.empty()) return OkStatus();
    KafkaMessage next = std::move(held_.front());
    held_.pop_front();
    return RunOne(next, stop);
  }
  if (paused_) {
    ELLM_RETURN_IF_ERROR(ResumeAll());
    paused_ = false;
  }
  Tick();
  auto m = consumer_->Poll(options_.poll_timeout);
  if (!m.ok()) {
    if (m.status().code() != StatusCode::kUnavailable) return m.status();
    LogUnavailable(m.status());
    std::this_thread::sleep_for(options_.poll_timeout);
    return OkStatus();
  }
  if (!m->has_value()) return OkStatus();
  return RunOne(**m, stop);
}

Status JobConsumer::ReplaceAfterFatalError(const Status& failure) {
  const std::optional<std::string> fatal = consumer_->FatalError();
  if (!fatal) return failure;
  const auto now = Clock::now();
  std::erase_if(replaced_at_, [&](Clock::time_point t) { return now - t > kReplaceWindow; });
  if (replaced_at_.size() >= kMaxReplacements) {
    return Status(failure.code(),
                  failure.message() + " (the consumer was replaced " +
                      std::to_string(replaced_at_.size()) +
                      " times in the last 10 minutes after fatal errors: is another consumer "
                      "using the same group.instance.id?)");
  }
  spdlog::warn("kafka: the consumer hit a fatal error ({}); starting a new one", *fatal);
  Consuming("replacing the consumer after a fatal error: " + *fatal);
  // After a fatal error closing commits nothing and does not leave the
  // group; the new member (same group.instance.id, if set) takes over the
  // partitions and fetches from the committed offsets, so what was held is
  // delivered again.
  consumer_.reset();
  held_.clear();
  paused_ = false;
  replaced_at_.push_back(now);
  ++stats_.replaced;
  if (options_.on_replaced) options_.on_replaced();
  Consuming("joining the consumer group");
  ELLM_ASSIGN_OR_RETURN(consumer_, KafkaConsumer::Create(options_.kafka, options_.group_id,
                                                         {options_.jobs_topic}, this));
  return OkStatus();
}

Status JobConsumer::Run(const std::atomic<bool>& stop) {
  spdlog::info("kafka: consuming {} as group {}", options_.jobs_topic, options_.group_id);
  Consuming("joining the consumer group");
  Status result;
  while (!stop.load()) {
    Status step = Step(stop);
    if (step.ok()) continue;
    result = ReplaceAfterFatalError(step);
    if (!result.ok()) break;
  }
  Consuming("closing");
  Status closed = consumer_->Close();
  if (!closed.ok()) spdlog::warn("kafka: {}", closed.message());
  spdlog::info("kafka: consumer closed ({} committed, {} retried, {} abandoned, {} replaced)",
               stats_.committed, stats_.retried, stats_.abandoned, stats_.replaced);
  return result;
}

void JobConsumer::InjectFatalErrorForTest() { consumer_->InjectFatalErrorForTest(); }

}  // namespace ellm::ingest
