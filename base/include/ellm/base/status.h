// Status and StatusOr<T>: how every ellm interface reports an error that came
// from outside (files, GGUF, PDFs, messages, config, SQLite, Kafka). No
// exceptions cross our interfaces; third-party exceptions are caught at the
// adapter and converted here. Messages are written for the user: what went
// wrong, where (file, key, line, job id), and what was expected.
#pragma once

#include <cassert>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace ellm {

// Serialized into the job store as text (see StatusCodeName); append-only.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the input itself is malformed
  kNotFound,         // a file, key, tensor or job that should exist does not
  kAlreadyExists,
  kFailedPrecondition,  // the system is not in a state to do this
  kOutOfRange,          // an offset, length or index past the end
  kUnimplemented,       // well-formed but not supported (e.g. an unknown quant type)
  kResourceExhausted,   // memory, disk, limits
  kUnavailable,         // a peer (broker, disk) is away; retrying may help
  kDeadlineExceeded,
  kCancelled,
  kDataLoss,  // corruption detected (checksums, truncated files)
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: tensor 'blk.0.attn_q.weight' missing in model.gguf"
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>", code and reason unchanged.
  Status WithContext(std::string_view context) const;

  // An optional, stable machine-readable sub-category of the code, for
  // callers that record or branch on the kind of failure (e.g.
  // "extract.encrypted"): lower-case, dot-separated, never reworded once
  // published. Empty unless set; not part of ToString().
  const std::string& reason() const { return reason_; }
  // Returns a copy carrying `reason`. REQUIRES: !ok().
  Status WithReason(std::string reason) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string reason_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
inline Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
// An OS call failed: "<what>: <strerror(err)>", code chosen from errno
// (ENOENT -> NotFound, ENOSPC -> ResourceExhausted, EACCES -> FailedPrecondition, ...).
Status ErrnoError(int err, std::string_view what);

// A value or the Status saying why there is none. REQUIRES: a StatusOr built
// from a Status is built from a non-OK one.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
           !std::is_same_v<std::decay_t<U>, T> && !std::is_same_v<std::decay_t<U>, StatusOr>)
      StatusOr(U&& value)
      : v_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  // REQUIRES: ok().
  T& value() & { return Checked(); }
  const T& value() const& { return const_cast<StatusOr*>(this)->Checked(); }
  T&& value() && { return std::move(Checked()); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return const_cast<StatusOr*>(this)->Checked(); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &const_cast<StatusOr*>(this)->Checked(); }

 private:
  T& Checked() {
    if (!ok()) {
      // Reading the value of a failed StatusOr is a bug in our code.
      std::abort();
    }
    return std::get<T>(v_);
  }
  std::variant<Status, T> v_;
};

}  // namespace ellm

#define ELLM_CONCAT_INNER_(a, b) a##b
#define ELLM_CONCAT_(a, b) ELLM_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define ELLM_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::ellm::Status ellm_status_ = (expr);        \
    if (!ellm_status_.ok()) return ellm_status_; \
  } while (0)

// ELLM_ASSIGN_OR_RETURN(auto x, F()); declares x from a StatusOr or returns its error.
#define ELLM_ASSIGN_OR_RETURN(lhs, expr) \
  ELLM_ASSIGN_OR_RETURN_IMPL_(ELLM_CONCAT_(ellm_statusor_, __LINE__), lhs, expr)
#define ELLM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
