// C API: statuses, versions, dtype and backend names.
#include <cstring>

#include "api/api_objects.h"

#ifndef NFUSE_VERSION
#define NFUSE_VERSION "0.0.0"
#endif

namespace nfuse::api {

namespace {

// Returned when even a status cannot be allocated; never freed.
nfuse_status g_out_of_memory{NFUSE_OUT_OF_MEMORY, "out of memory"};

}  // namespace

nfuse_status_code to_c_code(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return NFUSE_OK;
    case StatusCode::kInvalidModel: return NFUSE_INVALID_MODEL;
    case StatusCode::kUnsupported: return NFUSE_UNSUPPORTED;
    case StatusCode::kUnavailable: return NFUSE_UNAVAILABLE;
    case StatusCode::kVersionMismatch: return NFUSE_VERSION_MISMATCH;
    case StatusCode::kOutOfMemory: return NFUSE_OUT_OF_MEMORY;
    case StatusCode::kInvalidArgument: return NFUSE_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return NFUSE_NOT_FOUND;
    case StatusCode::kInternal: return NFUSE_INTERNAL;
    case StatusCode::kIncompatibleDevice: return NFUSE_INCOMPATIBLE_DEVICE;
    case StatusCode::kCorruptBinary: return NFUSE_CORRUPT_BINARY;
    case StatusCode::kModelMismatch: return NFUSE_MODEL_MISMATCH;
    case StatusCode::kDeadlineExceeded: return NFUSE_DEADLINE_EXCEEDED;
    case StatusCode::kCancelled: return NFUSE_CANCELLED;
  }
  return NFUSE_INTERNAL;
}

namespace {

struct DTypePair {
  nfuse_dtype c;
  ir::DType ir;
};
constexpr DTypePair kDTypes[] = {
    {NFUSE_DTYPE_FLOAT32, ir::DType::kF32},   {NFUSE_DTYPE_UINT8, ir::DType::kU8},
    {NFUSE_DTYPE_INT8, ir::DType::kI8},       {NFUSE_DTYPE_UINT16, ir::DType::kU16},
    {NFUSE_DTYPE_INT16, ir::DType::kI16},     {NFUSE_DTYPE_INT32, ir::DType::kI32},
    {NFUSE_DTYPE_INT64, ir::DType::kI64},     {NFUSE_DTYPE_BOOL, ir::DType::kBool},
    {NFUSE_DTYPE_FLOAT16, ir::DType::kF16},   {NFUSE_DTYPE_FLOAT64, ir::DType::kF64},
    {NFUSE_DTYPE_UINT32, ir::DType::kU32},    {NFUSE_DTYPE_UINT64, ir::DType::kU64},
    {NFUSE_DTYPE_BFLOAT16, ir::DType::kBF16},
};

}  // namespace

nfuse_status* make_status(nfuse_status_code code, const std::string& message) {
  try {
    return new nfuse_status{code, message};
  } catch (...) {
    return &g_out_of_memory;
  }
}

nfuse_status* to_c(const Status& status) {
  if (status.ok()) return nullptr;
  return make_status(to_c_code(status.code()), status.message());
}

nfuse_status* out_of_memory_status() { return &g_out_of_memory; }
bool is_static_status(const nfuse_status* status) { return status == &g_out_of_memory; }

nfuse_dtype to_c(ir::DType dtype) {
  for (const DTypePair& p : kDTypes)
    if (p.ir == dtype) return p.c;
  return NFUSE_DTYPE_UNDEFINED;
}

ir::DType from_c(const nfuse_dtype& dtype) {
  const long long bits = enum_bits(dtype);
  for (const DTypePair& p : kDTypes)
    if (p.c == bits) return p.ir;
  return ir::DType::kUndefined;
}

}  // namespace nfuse::api

using namespace nfuse;

extern "C" {

nfuse_status_code nfuse_status_get_code(const nfuse_status* status) { return status ? status->code : NFUSE_OK; }

const char* nfuse_status_get_message(const nfuse_status* status) { return status ? status->message.c_str() : ""; }

void nfuse_status_release(nfuse_status* status) {
  if (status && !api::is_static_status(status)) delete status;
}

const char* nfuse_status_code_name(nfuse_status_code code) {
  switch (api::enum_bits(code)) {
    case NFUSE_OK: return "ok";
    case NFUSE_INVALID_MODEL: return "invalid model";
    case NFUSE_UNSUPPORTED: return "unsupported";
    case NFUSE_UNAVAILABLE: return "unavailable";
    case NFUSE_VERSION_MISMATCH: return "version mismatch";
    case NFUSE_OUT_OF_MEMORY: return "out of memory";
    case NFUSE_INVALID_ARGUMENT: return "invalid argument";
    case NFUSE_NOT_FOUND: return "not found";
    case NFUSE_INTERNAL: return "internal error";
    case NFUSE_INCOMPATIBLE_DEVICE: return "incompatible device";
    case NFUSE_CORRUPT_BINARY: return "corrupt binary";
    case NFUSE_MODEL_MISMATCH: return "model mismatch";
    case NFUSE_DEADLINE_EXCEEDED: return "deadline exceeded";
    case NFUSE_CANCELLED: return "cancelled";
  }
  return "unknown";
}

const char* nfuse_version(void) { return NFUSE_VERSION; }

uint32_t nfuse_api_version(void) { return NFUSE_API_VERSION; }

size_t nfuse_dtype_size(nfuse_dtype dtype) {
  const ir::DType t = api::from_c(dtype);
  return t == ir::DType::kUndefined ? 0 : ir::dtype_size(t);
}

const char* nfuse_dtype_name(nfuse_dtype dtype) {
  const ir::DType t = api::from_c(dtype);
  return t == ir::DType::kUndefined ? "undefined" : ir::dtype_name(t).data();
}

const char* nfuse_backend_name(nfuse_backend backend) {
  switch (api::enum_bits(backend)) {
    case NFUSE_BACKEND_AUTO: return "auto";
    case NFUSE_BACKEND_REF: return "ref";
    case NFUSE_BACKEND_CPU: return "cpu";
    case NFUSE_BACKEND_FUSION: return "fusion";
  }
  return nullptr;
}

}  // extern "C"
