#include "ellm/ingest/kafka.h"

#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <atomic>

namespace ellm::ingest {
namespace {

Status SetAll(RdKafka::Conf& conf, const std::map<std::string, std::string>& props) {
  std::string err;
  for (const auto& [k, v] : props) {
    if (conf.set(k, v, err) != RdKafka::Conf::CONF_OK) {
      return InvalidArgumentError("Kafka property '" + k + "'='" + v + "': " + err);
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

class DeliveryReport : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& message) override {
    auto* slot = static_cast<std::atomic<int>*>(message.msg_opaque());
    if (slot)
      slot->store(static_cast<int>(message.err()) == 0 ? 1 : -static_cast<int>(message.err()));
  }
};

DeliveryReport& DeliveryReporter() {
  static DeliveryReport report;
  return report;
}

}  // namespace

KafkaProducer::KafkaProducer(std::unique_ptr<RdKafka::Producer> p) : producer_(std::move(p)) {}
KafkaProducer::~KafkaProducer() {
  if (producer_) producer_->flush(5000);
}

StatusOr<std::unique_ptr<KafkaProducer>> KafkaProducer::Create(const KafkaOptions& options) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  auto props = BaseProps(options);
  props.emplace("enable.idempotence", "true");
  props.emplace("acks", "all");
  ELLM_RETURN_IF_ERROR(SetAll(*conf, props));
  std::string err;
  if (conf->set("dr_cb", &DeliveryReporter(), err) != RdKafka::Conf::CONF_OK) {
    return InternalError("Kafka: cannot install delivery callback: " + err);
  }
  std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), err));
  if (!p) return InvalidArgumentError("Kafka: cannot create producer: " + err);
  return std::unique_ptr<KafkaProducer>(new KafkaProducer(std::move(p)));
}

Status KafkaProducer::Produce(const std::string& topic, const std::string& key,
                              const std::string& payload, std::chrono::milliseconds timeout) {
  return Produce(topic, key, payload, {}, timeout);
}

Status KafkaProducer::Produce(const std::string& topic, const std::string& key,
                              const std::string& payload,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::chrono::milliseconds timeout) {
  std::atomic<int> delivered{0};
  RdKafka::Headers* hdrs = nullptr;
  if (!headers.empty()) {
    hdrs = RdKafka::Headers::create();
    for (const auto& [name, value] : headers) hdrs->add(name, value);
  }
  // On success librdkafka owns `hdrs`; on failure they are ours to free.
  RdKafka::ErrorCode rc =
      producer_->produce(topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                         const_cast<char*>(payload.data()), payload.size(), key.data(), key.size(),
                         0, hdrs, &delivered);
  if (rc != RdKafka::ERR_NO_ERROR) {
    delete hdrs;
    return KafkaError(rc, "cannot queue message for '" + topic + "'");
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (delivered.load() == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      // The message may still be delivered later; flush on destruction waits for it.
      return DeadlineExceededError("Kafka: no delivery report for a message to '" + topic +
                                   "' within " + std::to_string(timeout.count()) + " ms");
    }
    producer_->poll(50);
  }
  if (delivered.load() < 0) {
    return KafkaError(static_cast<RdKafka::ErrorCode>(-delivered.load()),
                      "delivery to '" + topic + "' failed");
  }
  return OkStatus();
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
  if (rc != RdKafka::ERR_NO_ERROR) {
    return KafkaError(rc, "cannot rewind " + message.topic + "[" +
                              std::to_string(message.partition) + "] to offset " +
                              std::to_string(message.offset));
  }
  return OkStatus();
}

Status KafkaConsumer::Close() {
  if (closed_) return OkStatus();
  closed_ = true;
  RdKafka::ErrorCode rc = consumer_->close();
  if (rc != RdKafka::ERR_NO_ERROR) return KafkaError(rc, "close failed");
  return OkStatus();
}

}  // namespace ellm::ingest
