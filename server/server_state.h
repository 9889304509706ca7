// What the HTTP API's handlers share (internal to server/): the loaded
// model, the pool of sessions replies run in, and the metrics; plus the small
// helpers every route uses to answer. Thread-safe as each member says.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/engine/engine.h"
#include "ellm/engine/reply.h"
#include "ellm/server/job_service.h"
#include "ellm/server/openai.h"

namespace ellm::server {

// A Prometheus histogram with fixed bounds.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // per bound, then +Inf
  double sum = 0;
  uint64_t n = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1) {}
  void Observe(double x) {
    size_t i = 0;
    while (i < bounds.size() && x > bounds[i]) ++i;
    ++counts[i];
    sum += x;
    ++n;
  }
  void Write(std::string& out, const std::string& name, const std::string& help) const {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cum = 0;
    for (size_t i = 0; i < bounds.size(); ++i) {
      cum += counts[i];
      out += name + "_bucket{le=\"" + nlohmann::json(bounds[i]).dump() + "\"} " +
             std::to_string(cum) + "\n";
    }
    cum += counts.back();
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
    out += name + "_sum " + nlohmann::json(sum).dump() + "\n" + name + "_count " +
           std::to_string(n) + "\n";
  }
};

struct ServerState {
  std::atomic<JobService*> jobs{nullptr};
  // The model, once set.
  std::atomic<bool> ready{false};
  Engine* engine = nullptr;
  std::unique_ptr<DecodeBatcher> batcher;  // the sessions' tokens decode together
  std::string model_id, fingerprint;
  int64_t n_ctx = 0;

  // Sessions: one reply each at a time.
  struct Slot {
    std::unique_ptr<Session> session;
    bool busy = false;
    uint64_t last_used = 0;
  };
  std::mutex slots_mu;
  std::condition_variable slots_cv;
  std::vector<Slot> slots;
  uint64_t uses = 0;
  std::atomic<int> admitted{0};
  // Choices admitted (running or queued) per API key, a request with `n`
  // choices counting n: at most per_key_limit each (0: no limit), so one
  // key cannot hold every session.
  std::mutex keys_mu;
  std::map<std::string, int> key_choices;
  int per_key_limit = 0;

  // Metrics.
  mutable std::mutex metrics_mu;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (endpoint, status)
  uint64_t prompt_tokens = 0, completion_tokens = 0, reused_tokens = 0;
  uint64_t client_gone = 0;  // replies ended because their client went away
  std::atomic<int> active_streams{0};
  Histogram ttft{{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}};
  Histogram itl{{0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1}};
  Histogram queue_wait{{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300}};

  // The idle session that can keep most of `prompt` (ReusablePrefix: a
  // follow-up finds its conversation, a new conversation one that began with
  // the same system prompt), else the one idle longest; marked busy.
  struct AcquiredSlot {
    size_t index = 0;
    int64_t reusable_prefix = 0;  // ReusablePrefix(its session, prompt), for ReplyOptions
  };
  AcquiredSlot AcquireSlot(const std::vector<TokenId>& prompt) {
    std::unique_lock<std::mutex> lock(slots_mu);
    slots_cv.wait(lock, [&] {
      for (const Slot& s : slots) {
        if (!s.busy) return true;
      }
      return false;
    });
    size_t best = slots.size();
    int64_t best_match = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].busy) continue;
      const int64_t match = ReusablePrefix(*slots[i].session, prompt);
      if (best == slots.size() || match > best_match ||
          (match == best_match && slots[i].last_used < slots[best].last_used)) {
        best = i;
        best_match = match;
      }
    }
    slots[best].busy = true;
    slots[best].last_used = ++uses;
    return {best, best_match};
  }
  void ReleaseSlot(size_t i) {
    {
      std::lock_guard<std::mutex> lock(slots_mu);
      slots[i].busy = false;
    }
    slots_cv.notify_one();
  }
  // `route`: a pattern of the server's fixed routes or "unmatched"
  // (RouteLabel), never a client's path: each value is a series kept for
  // the process's life.
  void Count(std::string_view route, int status) {
    std::lock_guard<std::mutex> lock(metrics_mu);
    ++requests[{std::string(route), status}];
  }
};

// "chatcmpl-" + 24 random hex digits.
inline std::string RandomId(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kHex[rng() % 16];
  return id;
}

inline void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(Dump(e.ToJson()), "application/json");
}

inline ApiError Error(int status, std::string type, std::string message, std::string code = "") {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

// Answers 503 (Retry-After) while the model loads; true when it did.
inline bool AnswerUnready(const ServerState& st, httplib::Response& res) {
  if (st.ready.load()) return false;
  res.set_header("Retry-After", "5");
  SendError(res, Error(503, "unavailable_error", "the model is loading; try again shortly"));
  return true;
}

}  // namespace ellm::server
