// Tensor: a dtype, concrete dims and a buffer that is either owned (shared) or borrowed.
// Copies are shallow: they share the buffer. Borrowed buffers (mmap, caller memory, arena)
// stay valid only as long as their owner keeps them; `keepalive` may tie that lifetime.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "nfuse/status.h"

namespace nfuse::ir {

int64_t shape_numel(std::span<const int64_t> dims);
std::string dims_to_string(std::span<const int64_t> dims);  // "1x3x224x224", "scalar" for rank 0

class Tensor {
 public:
  Tensor() = default;

  // A new zero-filled buffer, 64-byte aligned. Throws std::bad_alloc when memory runs out:
  // for sizes that come from models or inputs use try_allocate.
  static Tensor allocate(DType dtype, std::vector<int64_t> dims);
  // As allocate, but kOutOfMemory (naming the dims) instead of throwing, and for sizes that
  // overflow or exceed kMaxTensorBytes.
  static Result<Tensor> try_allocate(DType dtype, std::vector<int64_t> dims);
  static constexpr size_t kMaxTensorBytes = size_t{1} << 36;  // 64 GiB: far beyond any device
  // Wraps memory owned elsewhere; `keepalive` (optional) is held as long as any copy lives.
  static Tensor borrow(DType dtype, std::vector<int64_t> dims, void* data,
                       std::shared_ptr<void> keepalive = nullptr);
  // Caller memory bound to a graph output (zero-copy I/O): borrowed, and an op producing that
  // output writes into it in place (reuse_or_allocate keeps it when dtype and dims match).
  static Tensor bind_output(DType dtype, std::vector<int64_t> dims, void* data);
  bool bound_output() const { return bound_output_; }
  // A scalar or 1-D tensor from values (for tests and constant building).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, std::vector<int64_t> dims);

  bool empty() const { return dtype_ == DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t numel() const { return shape_numel(dims_); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool owns_data() const { return owned_; }
  // Owns its buffer and no other Tensor shares it (e.g. a run's output the caller has released).
  bool sole_owner() const { return owned_ && storage_ && storage_.use_count() == 1; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() { return static_cast<T*>(data_); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }

  // Same buffer, new dims with the same element count (caller checks the count).
  Tensor reshaped(std::vector<int64_t> dims) const;
  // Same buffer viewed as another dtype of the same element size (caller checks the size).
  Tensor bitcast(DType dtype) const;
  // A deep copy with an owned buffer.
  Tensor clone() const;
  // Element i read as double / int64 (any dtype); slow, for shape-like data and tests.
  double get_double(int64_t i) const { return load_as_double(dtype_, data_, i); }
  int64_t get_int(int64_t i) const;
  // All elements as int64 (for shape, axes, indices tensors).
  std::vector<int64_t> to_int_vector() const;
  std::vector<float> to_float_vector() const;

 private:
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> dims_;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  bool owned_ = false;
  bool bound_output_ = false;
};

// Makes *t a tensor of `dtype` and `dims` for an op to overwrite: keeps its buffer when it is
// already exactly that and nobody else holds it, or when it is caller memory bound to the output (a graph output from
// the previous run that the caller has released: a large output then costs no new allocation, zero-fill and page faults
// on every run), else allocates (try_allocate). The kept buffer's contents are unspecified.
Status reuse_or_allocate(Tensor* t, DType dtype, const std::vector<int64_t>& dims);

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, std::vector<int64_t> dims) {
  Tensor t = allocate(DTypeOf<T>::value, std::move(dims));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) out[i] = values[i];
  return t;
}

}  // namespace nfuse::ir
