#include "ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace nfuse::ir {

int64_t shape_numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_to_string(std::span<const int64_t> dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

Tensor Tensor::allocate(DType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  size_t bytes = t.bytes();
  // Round up so vector kernels may read a full register past the last element of small tensors.
  size_t alloc = ((bytes + 63) / 64) * 64 + 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, alloc);
  t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  t.owned_ = true;
  return t;
}

Status reuse_or_allocate(Tensor* t, DType dtype, const std::vector<int64_t>& dims) {
  if (t->dtype() == dtype && t->dims() == dims && (t->sole_owner() || t->bound_output())) return ok_status();
  NFUSE_ASSIGN_OR_RETURN(*t, Tensor::try_allocate(dtype, dims));
  return ok_status();
}

Result<Tensor> Tensor::try_allocate(DType dtype, std::vector<int64_t> dims) {
  size_t bytes = dtype_size(dtype);
  for (int64_t d : dims) {
    if (d < 0) return invalid_argument("negative dimension in " + dims_to_string(dims));
    if (d != 0 && bytes > kMaxTensorBytes / static_cast<size_t>(d)) {
      return out_of_memory("a " + std::string(dtype_name(dtype)) + " tensor of dims " + dims_to_string(dims) +
                           " exceeds the " + std::to_string(kMaxTensorBytes >> 30) + " GiB tensor limit");
    }
    bytes *= static_cast<size_t>(d);
  }
  try {
    return allocate(dtype, std::move(dims));
  } catch (const std::bad_alloc&) {
    return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes for a tensor");
  }
}

Tensor Tensor::borrow(DType dtype, std::vector<int64_t> dims, void* data,
                      std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.storage_ = std::move(keepalive);
  t.data_ = data;
  t.owned_ = false;
  return t;
}

Tensor Tensor::bind_output(DType dtype, std::vector<int64_t> dims, void* data) {
  Tensor t = borrow(dtype, std::move(dims), data);
  t.bound_output_ = true;
  return t;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  t.dims_ = std::move(dims);
  t.bound_output_ = false;  // a view is not the binding: only the bound output is written in place
  return t;
}

Tensor Tensor::bitcast(DType dtype) const {
  Tensor t = *this;
  t.dtype_ = dtype;
  t.bound_output_ = false;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = allocate(dtype_, dims_);
  if (bytes() > 0) std::memcpy(t.data_, data_, bytes());
  return t;
}

int64_t Tensor::get_int(int64_t i) const {
  switch (dtype_) {
    case DType::kI64: return data<int64_t>()[i];
    case DType::kU64: return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::kI32: return data<int32_t>()[i];
    default: return static_cast<int64_t>(get_double(i));
  }
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = get_int(i);
  return v;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(get_double(i));
  return v;
}

}  // namespace nfuse::ir
