// Helpers for the tensor-manipulation reference kernels. These ops move elements without
// looking at them, so most work on raw bytes of dtype_size() and cover every dtype at once.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/ref/ref_util.h"
#include "ir/tensor.h"

namespace nfuse::backends::ref {

// Copies element si of src to element di of dst (elements of `size` bytes).
inline void copy_elem(void* dst, int64_t di, const void* src, int64_t si, size_t size) {
  std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(di) * size,
              static_cast<const char*>(src) + static_cast<size_t>(si) * size, size);
}

// Calls fn(index, linear) for every multi-index of `dims` in row-major order.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& dims, Fn&& fn) {
  const int64_t total = ir::shape_numel(dims);
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(static_cast<const std::vector<int64_t>&>(index), i);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

// out = transpose(in viewed with dims `view`, perm): output dim i is view dim perm[i].
// `out` must hold numel(view) elements of in's dtype.
void permute_copy(const ir::Tensor& in, const std::vector<int64_t>& view, const std::vector<int64_t>& perm,
                  ir::Tensor& out);

// Normalises a data-dependent index into [0, dim): negative counts from the end. Returns false
// when it is out of range (the caller reports the error).
inline bool normalize_index(int64_t& i, int64_t dim) {
  if (i < -dim || i >= dim) return false;
  if (i < 0) i += dim;
  return true;
}

}  // namespace nfuse::backends::ref
