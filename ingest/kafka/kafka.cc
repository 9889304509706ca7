#include "ellm/ingest/kafka.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace ellm::ingest {
namespace {

Status SetAll(RdKafka::Conf& conf, const std::map<std::string, std::string>& props) {
  std::string err;
  for (const auto& [k, v] : props) {
    if (conf.set(k, v, err) != RdKafka::Conf::CONF_OK) {
      // Named, never echoed: the value may be a secret (sasl.password), and
      // librdkafka's message quotes it.
      for (size_t at = v.empty() ? std::string::npos : err.find(v); at != std::string::npos;
           at = err.find(v, at)) {
        err.replace(at, v.size(), "(value hidden)");
        at += 14;
      }
      return InvalidArgumentError("Kafka property '" + k + "' was refused: " + err);
    }
  }
  return OkStatus();
}

std::map<std::string, std::string> BaseProps(const KafkaOptions& o) {
  std::map<std::string, std::string> p = {
      {"bootstrap.servers", o.brokers},
      {"client.id", o.client_id},
  };
  for (const auto& kv : o.properties) p[kv.first] = kv.second;
  return p;
}

Status KafkaError(RdKafka::ErrorCode code, const std::string& what) {
  std::string m = "Kafka: " + what + ": " + RdKafka::err2str(code);
  switch (code) {
    case RdKafka::ERR__TRANSPORT:
    case RdKafka::ERR__ALL_BROKERS_DOWN:
    case RdKafka::ERR__TIMED_OUT:
    case RdKafka::ERR_REQUEST_TIMED_OUT:
    case RdKafka::ERR__MSG_TIMED_OUT:
      return UnavailableError(m);
    case RdKafka::ERR__QUEUE_FULL:
      return ResourceExhaustedError(m);
    default:
      return InternalError(m);
  }
}

// A message's delivery report may come after Produce stopped waiting for it
// (or from the flush at destruction), so the result slot is shared between
// the waiting call and the message, which holds one reference until its report.
struct Delivery {
  std::atomic<bool> done{false};
  std::atomic<int> err{RdKafka::ERR_NO_ERROR};
};
using DeliverySlot = std::shared_ptr<Delivery>;

class DeliveryReport : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& message) override {
    std::unique_ptr<DeliverySlot> slot(static_cast<DeliverySlot*>(message.msg_opaque()));
    if (!slot) return;
    (*slot)->err.store(static_cast<int>(message.err()));
    (*slot)->done.store(true, std::memory_order_release);
  }
};

DeliveryReport& DeliveryReporter() {
  static DeliveryReport report;
  return report;
}

StatusOr<std::unique_ptr<RdKafka::Producer>> NewProducer(
    const std::map<std::string, std::string>& props) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  ELLM_RETURN_IF_ERROR(SetAll(*conf, props));
  std::string err;
  if (conf->set("dr_cb", &DeliveryReporter(), err) != RdKafka::Conf::CONF_OK) {
    return InternalError("Kafka: cannot install delivery callback: " + err);
  }
  std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), err));
  if (!p) return InvalidArgumentError("Kafka: cannot create producer: " + err);
  return p;
}

// Owns an RdKafka::Error (librdkafka's transactional calls return one, or null).
using TxnError = std::unique_ptr<RdKafka::Error>;

std::string Describe(const RdKafka::Error& e) {
  return e.name() + ": " + e.str() + (e.is_fatal() ? " (fatal)" : "") +
         (e.txn_requires_abort() ? " (abortable)" : "") + (e.is_retriable() ? " (retriable)" : "");
}

// Drops what `p` still holds and serves the reports of what it dropped, so
// every message's slot is released before `p` goes away.
void Discard(RdKafka::Producer& p) {
  p.purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
  p.flush(1000);
}

}  // namespace

KafkaProducer::~KafkaProducer() {
  if (!producer_) return;
  // An open transaction would hold back read_committed consumers of its
  // partitions until the broker times it out (transaction.timeout.ms).
  if (in_transaction_) {
    TxnError e(producer_->abort_transaction(5000));
    if (e) spdlog::warn("kafka: abort of the open transaction at exit failed: {}", e->str());
  }
  if (producer_->flush(5000) != RdKafka::ERR_NO_ERROR) Discard(*producer_);
}

StatusOr<std::unique_ptr<KafkaProducer>> KafkaProducer::Create(
    const KafkaOptions& options, const std::string& transactional_id) {
  std::unique_ptr<KafkaProducer> p(new KafkaProducer());
  p->props_ = BaseProps(options);
  p->transactional_id_ = transactional_id;
  if (!transactional_id.empty()) p->props_["transactional.id"] = transactional_id;
  p->props_.emplace("enable.idempotence", "true");
  p->props_.emplace("acks", "all");
  p->props_.emplace("message.timeout.ms", std::to_string(kDefaultMessageTimeout.count()));
  const std::string& timeout = p->props_["message.timeout.ms"];
  char* end = nullptr;
  long long ms = std::strtoll(timeout.c_str(), &end, 10);
  if (timeout.empty() || *end != '\0' || ms < 0) {
    return InvalidArgumentError("Kafka property 'message.timeout.ms'='" + timeout +
                                "': not a number of milliseconds");
  }
  p->message_timeout_ = std::chrono::milliseconds(ms);
  ELLM_ASSIGN_OR_RETURN(p->producer_, NewProducer(p->props_));
  if (p->transactional()) {
    // A broker that is away (a timeout) is waited for at the first
    // transaction; anything else means transactions cannot work here.
    Status init = p->InitTransactions(std::chrono::milliseconds(10000));
    if (!init.ok() && init.code() != StatusCode::kUnavailable) return init;
    if (!init.ok()) spdlog::warn("{} (retrying at the first transaction)", init.message());
  }
  return p;
}

Status KafkaProducer::Restart() {
  std::string reason;
  RdKafka::ErrorCode fatal = producer_->fatal_error(reason);
  if (fatal != RdKafka::ERR_NO_ERROR) {
    spdlog::warn("kafka: the producer hit a fatal error ({}: {}); starting a new one",
                 RdKafka::err2str(fatal), reason);
  }
  Discard(*producer_);
  producer_.reset();
  ++restarts_;
  if (in_transaction_) ++aborted_transactions_;  // the new producer's init ends it
  initialized_ = false;
  in_transaction_ = false;
  ELLM_ASSIGN_OR_RETURN(producer_, NewProducer(props_));
  // The new producer's init_transactions fences the old one and ends its
  // open transaction; a failure here is retried by the next BeginIfNeeded.
  if (transactional()) (void)InitTransactions(kTransactionCallTimeout);
  return OkStatus();
}

Status KafkaProducer::InitTransactions(std::chrono::milliseconds timeout) {
  TxnError e(producer_->init_transactions(static_cast<int>(timeout.count())));
  if (!e) {
    initialized_ = true;
    spdlog::info("kafka: transactional producer '{}' registered", transactional_id_);
    return OkStatus();
  }
  const std::string m = "Kafka: cannot register transactional.id '" + transactional_id_ +
                        "' (init_transactions): " + Describe(*e);
  // Fatal (fenced at once by another producer with the id): BeginIfNeeded
  // starts afresh next time.
  if (e->is_retriable() || e->is_fatal()) return UnavailableError(m);
  return FailedPreconditionError(m);
}

Status KafkaProducer::BeginIfNeeded() {
  if (!initialized_) {
    std::string reason;
    if (producer_->fatal_error(reason) != RdKafka::ERR_NO_ERROR) ELLM_RETURN_IF_ERROR(Restart());
    if (!initialized_) ELLM_RETURN_IF_ERROR(InitTransactions(kTransactionCallTimeout));
  }
  if (in_transaction_) return OkStatus();
  TxnError e(producer_->begin_transaction());
  if (e) {
    const std::string m = "Kafka: cannot begin a transaction: " + Describe(*e);
    if (e->is_fatal()) ELLM_RETURN_IF_ERROR(Restart());
    return UnavailableError(m);
  }
  in_transaction_ = true;
  return OkStatus();
}

Status KafkaProducer::AbortTransaction() {
  if (!transactional() || !in_transaction_) return OkStatus();
  TxnError e(producer_->abort_transaction(static_cast<int>(kTransactionCallTimeout.count())));
  if (!e) {
    in_transaction_ = false;
    ++aborted_transactions_;
    return OkStatus();
  }
  spdlog::warn("kafka: abort of the open transaction failed ({}); starting a new producer",
               Describe(*e));
  // A producer with the same transactional.id ends the open transaction
  // (init_transactions aborts it), whatever state this one is in.
  return Restart();
}

Status KafkaProducer::CommitTransaction(const KafkaMessage& consumed, const GroupMetadata& group) {
  if (!transactional()) {
    return FailedPreconditionError("Kafka: CommitTransaction on a producer without transactions");
  }
  if (group.empty()) return InvalidArgumentError("Kafka: CommitTransaction without group metadata");
  const std::string where = consumed.topic + "[" + std::to_string(consumed.partition) + "]@" +
                            std::to_string(consumed.offset + 1);
  ELLM_RETURN_IF_ERROR(BeginIfNeeded());
  // Abortable: the transaction is aborted and everything is sent again.
  // Fatal (fenced by a newer producer with this id): a new producer.
  auto failed = [&](const RdKafka::Error& e, const std::string& what) -> Status {
    const std::string m = "Kafka: " + what + " for " + where + " failed: " + Describe(e);
    if (e.is_fatal()) {
      ELLM_RETURN_IF_ERROR(Restart());
    } else {
      ELLM_RETURN_IF_ERROR(AbortTransaction());
    }
    return UnavailableError(m + "; the transaction was aborted");
  };
  {
    std::unique_ptr<RdKafka::TopicPartition> tp(
        RdKafka::TopicPartition::create(consumed.topic, consumed.partition, consumed.offset + 1));
    std::vector<RdKafka::TopicPartition*> offsets = {tp.get()};
    TxnError e;
    // Retriable: the same offsets and metadata again, as librdkafka advises.
    for (int attempt = 0; attempt < 3; ++attempt) {
      e.reset(producer_->send_offsets_to_transaction(
          offsets, group.metadata_.get(), static_cast<int>(kTransactionCallTimeout.count())));
      if (!e || !e->is_retriable() || e->txn_requires_abort() || e->is_fatal()) break;
    }
    if (e) return failed(*e, "sending the offset to the transaction");
  }
  TxnError e;
  for (int attempt = 0; attempt < 3; ++attempt) {
    // Resumable: a call after a timeout continues the same commit.
    e.reset(producer_->commit_transaction(static_cast<int>(kTransactionCallTimeout.count())));
    if (!e || !e->is_retriable() || e->txn_requires_abort() || e->is_fatal()) break;
  }
  if (!e) {
    in_transaction_ = false;
    return OkStatus();
  }
  if (e->is_retriable() && !e->txn_requires_abort() && !e->is_fatal()) {
    const std::string m = "Kafka: the commit of the transaction for " + where +
                          " did not finish (" + Describe(*e) + "); its outcome is unknown";
    spdlog::warn("{}; starting a new producer", m);
    ELLM_RETURN_IF_ERROR(Restart());
    return UnavailableError(m);
  }
  return failed(*e, "committing the transaction");
}

void KafkaProducer::InjectFatalErrorForTest() {
  rd_kafka_test_fatal_error(producer_->c_ptr(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                            "injected by a test");
}

Status KafkaProducer::Produce(const std::string& topic, const std::string& key,
                              const std::string& payload) {
  return Produce(topic, key, payload, {});
}

Status KafkaProducer::Produce(const std::string& topic, const std::string& key,
                              const std::string& payload,
                              const std::vector<std::pair<std::string, std::string>>& headers) {
  if (transactional()) ELLM_RETURN_IF_ERROR(BeginIfNeeded());
  auto delivery = std::make_shared<Delivery>();
  RdKafka::ErrorCode rc = RdKafka::ERR_NO_ERROR;
  for (int attempt = 0; attempt < 2; ++attempt) {
    RdKafka::Headers* hdrs = nullptr;
    if (!headers.empty()) {
      hdrs = RdKafka::Headers::create();
      for (const auto& [name, value] : headers) hdrs->add(name, value);
    }
    auto* slot = new DeliverySlot(delivery);
    // On success librdkafka owns `hdrs` and `slot`; on failure they are ours.
    rc = producer_->produce(topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                            const_cast<char*>(payload.data()), payload.size(), key.data(),
                            key.size(), 0, hdrs, slot);
    if (rc == RdKafka::ERR_NO_ERROR) break;
    delete hdrs;
    delete slot;
    if (rc != RdKafka::ERR__FATAL || attempt > 0) {
      return KafkaError(rc, "cannot queue message for '" + topic + "'");
    }
    ELLM_RETURN_IF_ERROR(Restart());
    // What this transaction held went with the old producer: the caller must
    // send it all again, so this message must not start a new transaction.
    if (transactional()) {
      return UnavailableError(
          "Kafka: the transactional producer was replaced after a fatal "
          "error; the transaction's messages must be sent again");
    }
  }
  // librdkafka reports every message by message.timeout.ms (0: no limit); the
  // margin covers a report that is late to be served, never a lost one.
  const auto limit = message_timeout_.count() > 0 ? std::chrono::steady_clock::now() +
                                                        message_timeout_ + std::chrono::seconds(30)
                                                  : std::chrono::steady_clock::time_point::max();
  while (!delivery->done.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() >= limit) {
      return DeadlineExceededError("Kafka: no delivery report for a message to '" + topic +
                                   "' within " + std::to_string(message_timeout_.count()) +
                                   " ms (message.timeout.ms) and a margin");
    }
    producer_->poll(50);
  }
  auto err = static_cast<RdKafka::ErrorCode>(delivery->err.load());
  if (err == RdKafka::ERR_NO_ERROR) return OkStatus();
  Status failed = KafkaError(err, "delivery to '" + topic + "' failed");
  if (err == RdKafka::ERR__FATAL) ELLM_RETURN_IF_ERROR(Restart());
  return failed;
}

namespace {

std::vector<TopicPartition> Convert(const std::vector<RdKafka::TopicPartition*>& parts) {
  std::vector<TopicPartition> out;
  for (const auto* p : parts) out.push_back({p->topic(), p->partition()});
  return out;
}

// Owns the RdKafka handles for a list of partitions.
class PartitionList {
 public:
  explicit PartitionList(const std::vector<TopicPartition>& parts) {
    for (const auto& p : parts)
      list_.push_back(RdKafka::TopicPartition::create(p.topic, p.partition));
  }
  ~PartitionList() { RdKafka::TopicPartition::destroy(list_); }
  std::vector<RdKafka::TopicPartition*>& get() { return list_; }

 private:
  std::vector<RdKafka::TopicPartition*> list_;
};

}  // namespace

// Applies eager assignments and tells the listener. Runs inside consume().
class KafkaConsumer::Rebalancer : public RdKafka::RebalanceCb {
 public:
  explicit Rebalancer(RebalanceListener* listener) : listener_(listener) {}
  void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& partitions) override {
    if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
      consumer->assign(partitions);
      // librdkafka keeps a partition's pause flag across unassign/assign
      // (2.0.2), so state it either way.
      if (listener_ && listener_->OnAssigned(Convert(partitions))) {
        consumer->pause(partitions);
      } else {
        consumer->resume(partitions);
      }
      return;
    }
    if (listener_) listener_->OnRevoked(Convert(partitions), consumer->assignment_lost());
    consumer->unassign();
  }

 private:
  RebalanceListener* listener_;
};

KafkaConsumer::KafkaConsumer(std::unique_ptr<RdKafka::KafkaConsumer> c,
                             std::unique_ptr<Rebalancer> r)
    : rebalancer_(std::move(r)), consumer_(std::move(c)) {}
KafkaConsumer::~KafkaConsumer() { (void)Close(); }

StatusOr<std::unique_ptr<KafkaConsumer>> KafkaConsumer::Create(
    const KafkaOptions& options, const std::string& group_id,
    const std::vector<std::string>& topics, RebalanceListener* listener) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  auto props = BaseProps(options);
  props["group.id"] = group_id;
  props.emplace("enable.auto.commit", "false");
  props.emplace("enable.auto.offset.store", "false");
  props.emplace("auto.offset.reset", "earliest");
  props.emplace("enable.partition.eof", "false");
  // Eager and simple: cooperative-sticky in librdkafka 2.0.2 (Debian
  // bookworm) still has open rebalance bugs (e.g. confluentinc/librdkafka
  // #4312, a crash closing before the first rebalance, fixed in 2.2.1).
  props.emplace("partition.assignment.strategy", "roundrobin");
  // The job consumer calls Poll every ~100 ms even while a job runs, so
  // this bound is about a stuck process, not a long job.
  props.emplace("max.poll.interval.ms", "300000");
  ELLM_RETURN_IF_ERROR(SetAll(*conf, props));
  std::string err;
  auto rebalancer = std::make_unique<Rebalancer>(listener);
  if (conf->set("rebalance_cb", rebalancer.get(), err) != RdKafka::Conf::CONF_OK) {
    return InternalError("Kafka: cannot install rebalance callback: " + err);
  }
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!c) return InvalidArgumentError("Kafka: cannot create consumer: " + err);
  RdKafka::ErrorCode rc = c->subscribe(topics);
  if (rc != RdKafka::ERR_NO_ERROR) return KafkaError(rc, "cannot subscribe");
  return std::unique_ptr<KafkaConsumer>(new KafkaConsumer(std::move(c), std::move(rebalancer)));
}

StatusOr<std::optional<KafkaMessage>> KafkaConsumer::Poll(std::chrono::milliseconds timeout) {
  std::unique_ptr<RdKafka::Message> m(consumer_->consume(static_cast<int>(timeout.count())));
  switch (m->err()) {
    case RdKafka::ERR_NO_ERROR: {
      KafkaMessage out;
      out.topic = m->topic_name();
      out.partition = m->partition();
      out.offset = m->offset();
      if (m->key()) out.key = *m->key();
      if (m->payload()) out.payload.assign(static_cast<const char*>(m->payload()), m->len());
      if (RdKafka::Headers* h = m->headers()) {
        for (const RdKafka::Headers::Header& hd : h->get_all()) {
          out.headers.emplace_back(hd.key(), hd.value()
                                                 ? std::string(hd.value_string(), hd.value_size())
                                                 : std::string());
        }
      }
      return std::optional<KafkaMessage>(std::move(out));
    }
    case RdKafka::ERR__TIMED_OUT:
    case RdKafka::ERR__PARTITION_EOF:
    // The topic may not exist yet; the broker creates it on first produce.
    case RdKafka::ERR_UNKNOWN_TOPIC_OR_PART:
      return std::optional<KafkaMessage>();
    case RdKafka::ERR__FATAL:
      return InternalError("Kafka: fatal client error: " + m->errstr());
    default:
      // Broker down, transport errors, ...: librdkafka reconnects by itself.
      return UnavailableError("Kafka: " + m->errstr());
  }
}

Status KafkaConsumer::Commit(const KafkaMessage& message) {
  std::unique_ptr<RdKafka::TopicPartition> tp(
      RdKafka::TopicPartition::create(message.topic, message.partition, message.offset + 1));
  std::vector<RdKafka::TopicPartition*> offsets = {tp.get()};
  RdKafka::ErrorCode rc = consumer_->commitSync(offsets);
  if (rc != RdKafka::ERR_NO_ERROR) {
    return KafkaError(rc, "commit of " + message.topic + "[" + std::to_string(message.partition) +
                              "]@" + std::to_string(message.offset + 1) + " failed");
  }
  if (tp->err() != RdKafka::ERR_NO_ERROR) return KafkaError(tp->err(), "commit rejected");
  return OkStatus();
}

StatusOr<int64_t> KafkaConsumer::Committed(const TopicPartition& tp,
                                           std::chrono::milliseconds timeout) {
  PartitionList list({tp});
  RdKafka::ErrorCode rc = consumer_->committed(list.get(), static_cast<int>(timeout.count()));
  if (rc == RdKafka::ERR_NO_ERROR) rc = list.get()[0]->err();
  if (rc != RdKafka::ERR_NO_ERROR) {
    return KafkaError(rc, "cannot read the committed offset of " + tp.ToString());
  }
  const int64_t offset = list.get()[0]->offset();
  return offset < 0 ? int64_t{-1} : offset;
}

GroupMetadata KafkaConsumer::Membership() {
  GroupMetadata g;
  g.metadata_.reset(consumer_->groupMetadata());
  return g;
}

StatusOr<std::vector<TopicPartition>> KafkaConsumer::Assignment() {
  std::vector<RdKafka::TopicPartition*> parts;
  RdKafka::ErrorCode rc = consumer_->assignment(parts);
  std::vector<TopicPartition> out = Convert(parts);
  RdKafka::TopicPartition::destroy(parts);
  if (rc != RdKafka::ERR_NO_ERROR) return KafkaError(rc, "cannot read the assignment");
  return out;
}

Status KafkaConsumer::Pause(const std::vector<TopicPartition>& partitions) {
  PartitionList list(partitions);
  RdKafka::ErrorCode rc = consumer_->pause(list.get());
  if (rc != RdKafka::ERR_NO_ERROR) return KafkaError(rc, "cannot pause partitions");
  return OkStatus();
}

Status KafkaConsumer::Resume(const std::vector<TopicPartition>& partitions) {
  PartitionList list(partitions);
  RdKafka::ErrorCode rc = consumer_->resume(list.get());
  if (rc != RdKafka::ERR_NO_ERROR) return KafkaError(rc, "cannot resume partitions");
  return OkStatus();
}

int64_t KafkaConsumer::Lag() {
  std::vector<RdKafka::TopicPartition*> parts;
  if (consumer_->assignment(parts) != RdKafka::ERR_NO_ERROR) return 0;
  consumer_->position(parts);
  int64_t lag = 0;
  for (RdKafka::TopicPartition* p : parts) {
    int64_t low = 0, high = -1;
    if (consumer_->get_watermark_offsets(p->topic(), p->partition(), &low, &high) !=
            RdKafka::ERR_NO_ERROR ||
        high < 0) {
      continue;
    }
    int64_t pos = p->offset() >= 0 ? p->offset() : low;
    lag += std::max<int64_t>(0, high - pos);
  }
  RdKafka::TopicPartition::destroy(parts);
  return lag;
}

Status KafkaConsumer::Rewind(const KafkaMessage& message) {
  std::unique_ptr<RdKafka::TopicPartition> tp(
      RdKafka::TopicPartition::create(message.topic, message.partition, message.offset));
  RdKafka::ErrorCode rc = consumer_->seek(*tp, 5000);
  if (rc == RdKafka::ERR__STATE) {
    return FailedPreconditionError(
        "Kafka: " + message.topic + "[" + std::to_string(message.partition) +
        "] is not fetching yet (just assigned): " + RdKafka::err2str(rc));
  }
  if (rc != RdKafka::ERR_NO_ERROR) {
    return KafkaError(rc, "cannot rewind " + message.topic + "[" +
                              std::to_string(message.partition) + "] to offset " +
                              std::to_string(message.offset));
  }
  return OkStatus();
}

std::optional<std::string> KafkaConsumer::FatalError() {
  std::string reason;
  const RdKafka::ErrorCode code = consumer_->fatal_error(reason);
  if (code == RdKafka::ERR_NO_ERROR) return std::nullopt;
  return RdKafka::err2str(code) + ": " + reason;
}

void KafkaConsumer::InjectFatalErrorForTest() {
  rd_kafka_test_fatal_error(consumer_->c_ptr(), RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID,
                            "injected by a test");
}

Status KafkaConsumer::Close() {
  if (closed_) return OkStatus();
  closed_ = true;
  RdKafka::ErrorCode rc = consumer_->close();
  if (rc != RdKafka::ERR_NO_ERROR) return KafkaError(rc, "close failed");
  return OkStatus();
}

}  // namespace ellm::ingest
