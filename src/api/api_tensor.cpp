// C API: tensors that own their memory or wrap the caller's.
#include <limits>

#include "api/api_objects.h"
#include "runtime/npy.h"

namespace nfuse::api {

Result<std::vector<int64_t>> checked_dims(const char* fn, const nfuse_dtype& dtype, const int64_t* dims, size_t rank,
                                          size_t* bytes_out) {
  const ir::DType t = from_c(dtype);
  if (t == ir::DType::kUndefined)
    return invalid_argument(std::string(fn) + ": unknown dtype " + std::to_string(enum_bits(dtype)));
  if (rank > 0 && !dims) return invalid_argument(std::string(fn) + ": dims is NULL for rank " + std::to_string(rank));
  constexpr size_t kMaxRank = 64;
  if (rank > kMaxRank) return invalid_argument(std::string(fn) + ": rank " + std::to_string(rank) + " exceeds 64");
  std::vector<int64_t> v(dims, dims + rank);
  size_t bytes = ir::dtype_size(t);
  for (size_t i = 0; i < rank; ++i) {
    if (v[i] < 0)
      return invalid_argument(std::string(fn) + ": dim " + std::to_string(i) + " is negative (" + std::to_string(v[i]) +
                              ")");
    const auto d = static_cast<uint64_t>(v[i]);
    if (d != 0 && bytes > std::numeric_limits<size_t>::max() / d)
      return invalid_argument(std::string(fn) + ": dims " + ir::dims_to_string(v) + " overflow the byte size");
    bytes *= static_cast<size_t>(d);
  }
  *bytes_out = bytes;
  return v;
}

}  // namespace nfuse::api

using namespace nfuse;
using api::check_handle;
using api::check_out;
using api::guard;

extern "C" {

nfuse_status* nfuse_tensor_create(nfuse_dtype dtype, const int64_t* dims, size_t rank, nfuse_tensor** out) {
  constexpr const char* fn = "nfuse_tensor_create";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    size_t bytes = 0;
    NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> v, api::checked_dims(fn, dtype, dims, rank, &bytes));
    if (bytes > ir::Tensor::kMaxTensorBytes)
      return invalid_argument(std::string(fn) + ": " + std::to_string(bytes) + " bytes exceed the tensor limit");
    auto t = std::make_unique<nfuse_tensor>();
    NFUSE_ASSIGN_OR_RETURN(t->tensor, ir::Tensor::try_allocate(api::from_c(dtype), std::move(v)));
    api::publish(std::move(t), out);
    return ok_status();
  });
}

nfuse_status* nfuse_tensor_wrap(nfuse_dtype dtype, const int64_t* dims, size_t rank, void* data, size_t byte_size,
                                nfuse_tensor** out) {
  constexpr const char* fn = "nfuse_tensor_wrap";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    size_t bytes = 0;
    NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> v, api::checked_dims(fn, dtype, dims, rank, &bytes));
    if (!data && bytes > 0) return invalid_argument(std::string(fn) + ": data is NULL");
    if (byte_size != bytes)
      return invalid_argument(std::string(fn) + ": byte_size " + std::to_string(byte_size) + " does not match " +
                              std::to_string(bytes) + " bytes of a " + nfuse_dtype_name(dtype) + " tensor " +
                              ir::dims_to_string(v));
    auto t = std::make_unique<nfuse_tensor>();
    t->tensor = ir::Tensor::borrow(api::from_c(dtype), std::move(v), data);
    api::publish(std::move(t), out);
    return ok_status();
  });
}

void nfuse_tensor_release(nfuse_tensor* tensor) { api::retire(tensor); }

nfuse_status* nfuse_tensor_get_dtype(const nfuse_tensor* tensor, nfuse_dtype* out) {
  return api::get("nfuse_tensor_get_dtype", "tensor", tensor, out,
                  [](const nfuse_tensor& t) { return api::to_c(t.tensor.dtype()); });
}

nfuse_status* nfuse_tensor_get_rank(const nfuse_tensor* tensor, size_t* out) {
  return api::get("nfuse_tensor_get_rank", "tensor", tensor, out,
                  [](const nfuse_tensor& t) { return t.tensor.dims().size(); });
}

nfuse_status* nfuse_tensor_get_dims(const nfuse_tensor* tensor, const int64_t** out) {
  return api::get("nfuse_tensor_get_dims", "tensor", tensor, out,
                  [](const nfuse_tensor& t) { return t.tensor.dims().data(); });
}

nfuse_status* nfuse_tensor_get_byte_size(const nfuse_tensor* tensor, size_t* out) {
  return api::get("nfuse_tensor_get_byte_size", "tensor", tensor, out,
                  [](const nfuse_tensor& t) { return t.tensor.bytes(); });
}

nfuse_status* nfuse_tensor_get_data(nfuse_tensor* tensor, void** out) {
  // The buffer is the caller's to write: the handle is const only for the lookup.
  return api::get("nfuse_tensor_get_data", "tensor", tensor, out,
                  [](const nfuse_tensor& t) { return const_cast<void*>(t.tensor.raw()); });
}

nfuse_status* nfuse_tensor_load_npy(const char* path, nfuse_tensor** out) {
  constexpr const char* fn = "nfuse_tensor_load_npy";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "path", path));
    auto t = std::make_unique<nfuse_tensor>();
    NFUSE_ASSIGN_OR_RETURN(t->tensor, runtime::read_npy(path));
    api::publish(std::move(t), out);
    return ok_status();
  });
}

nfuse_status* nfuse_tensor_save_npy(const nfuse_tensor* tensor, const char* path) {
  constexpr const char* fn = "nfuse_tensor_save_npy";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "tensor", tensor));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "path", path));
    return runtime::write_npy(path, tensor->tensor);
  });
}

}  // extern "C"
