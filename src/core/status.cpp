#include "nfuse/status.h"

namespace nfuse {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kVersionMismatch: return "version mismatch";
    case StatusCode::kOutOfMemory: return "out of memory";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kIncompatibleDevice: return "incompatible device";
    case StatusCode::kCorruptBinary: return "corrupt binary";
    case StatusCode::kModelMismatch: return "model mismatch";
    case StatusCode::kDeadlineExceeded: return "deadline exceeded";
    case StatusCode::kCancelled: return "cancelled";
  }
  return "unknown";
}

Status Status::with_context(std::string_view context) const {
  if (ok() || context.empty()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status invalid_model(std::string m) { return Status(StatusCode::kInvalidModel, std::move(m)); }
Status unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }
Status invalid_argument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
Status not_found(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status internal_error(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
Status out_of_memory(std::string m) { return Status(StatusCode::kOutOfMemory, std::move(m)); }
Status version_mismatch(std::string m) { return Status(StatusCode::kVersionMismatch, std::move(m)); }
Status incompatible_device(std::string m) { return Status(StatusCode::kIncompatibleDevice, std::move(m)); }
Status corrupt_binary(std::string m) { return Status(StatusCode::kCorruptBinary, std::move(m)); }
Status model_mismatch(std::string m) { return Status(StatusCode::kModelMismatch, std::move(m)); }
Status deadline_exceeded(std::string m) { return Status(StatusCode::kDeadlineExceeded, std::move(m)); }
Status cancelled(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }

}  // namespace nfuse
