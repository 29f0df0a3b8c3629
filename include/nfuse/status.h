// Status and Result<T>: how errors travel through nfuse. No exception crosses the public API.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace nfuse {

enum class StatusCode {
  kOk = 0,
  kInvalidModel,     // the model file or graph is malformed
  kUnsupported,      // well-formed, but nfuse cannot run it (op, dtype, attribute value)
  kUnavailable,      // a device, library or file is not present
  kVersionMismatch,  // a context binary or model from an incompatible version
  kOutOfMemory,
  kInvalidArgument,  // the caller passed something wrong (shape, dtype, name, flag)
  kNotFound,
  kInternal,            // a bug in nfuse
  kIncompatibleDevice,  // a context binary needs what this CPU or build lacks (ISA features, backends)
  kCorruptBinary,       // a context binary fails a structural or checksum check (which section, which check)
  kModelMismatch,       // a context binary compiled from another model than the one given
  kDeadlineExceeded,    // a request dropped because its deadline passed before it ran
  kCancelled,           // a request abandoned: its runtime shut down, or the caller cancelled it
};

const char* status_code_name(StatusCode code);

// A code plus a message; context is prepended as the error travels up ("loading x: node y: ...").
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns this status with "context: " prepended to the message (no-op when ok).
  Status with_context(std::string_view context) const;
  // "kInvalidModel: message"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }
Status invalid_model(std::string message);
Status unsupported(std::string message);
Status invalid_argument(std::string message);
Status not_found(std::string message);
Status unavailable(std::string message);
Status internal_error(std::string message);
Status out_of_memory(std::string message);
Status version_mismatch(std::string message);
Status incompatible_device(std::string message);
Status corrupt_binary(std::string message);
Status model_mismatch(std::string message);
Status deadline_exceeded(std::string message);
Status cancelled(std::string message);

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace nfuse

#define NFUSE_CONCAT_INNER_(a, b) a##b
#define NFUSE_CONCAT_(a, b) NFUSE_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function when it is not ok, with `context` added.
#define NFUSE_RETURN_IF_ERROR(expr, context)                              \
  do {                                                                    \
    ::nfuse::Status nfuse_status_ = (expr);                               \
    if (!nfuse_status_.ok()) return nfuse_status_.with_context(context); \
  } while (0)

// Plain propagation without added context.
#define NFUSE_RETURN_IF_ERROR_PLAIN(expr)                \
  do {                                                   \
    ::nfuse::Status nfuse_status_ = (expr);              \
    if (!nfuse_status_.ok()) return nfuse_status_;       \
  } while (0)

// `lhs = value of expr`, or return its status from the enclosing function.
#define NFUSE_ASSIGN_OR_RETURN(lhs, expr)                                   \
  NFUSE_ASSIGN_OR_RETURN_IMPL_(NFUSE_CONCAT_(nfuse_result_, __LINE__), lhs, expr)
#define NFUSE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
