// NonZero (coordinates of non-zero elements, one row per dim) and Compress (the slices or
// elements where the condition is true).
#include <algorithm>
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {
namespace {

Status nonzero(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  // A scalar counts as 1-D: one row of zeros.
  const std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.dims();
  const int64_t nnz = y.rank() == 2 ? y.dim(1) : -1;
  if (y.rank() != 2 || y.dim(0) != static_cast<int64_t>(dims.size())) return a.error("bad output shape");
  int64_t col = 0;
  Status status;
  for_each_index(dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    if (x.get_double(linear) == 0.0 || !status.ok()) return;
    if (col >= nnz) {
      status = a.error("more non-zero elements than the output holds");
      return;
    }
    for (size_t d = 0; d < idx.size(); ++d) y.data<int64_t>()[static_cast<int64_t>(d) * nnz + col] = idx[d];
    ++col;
  });
  return status;
}

Status compress(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& cond = a.in(1);
  ir::Tensor& y = a.out(0);
  const bool* c = cond.data<bool>();
  const size_t esize = ir::dtype_size(x.dtype());
  int64_t outer = 1, dim = x.numel(), inner = 1;
  if (a.attrs().has("axis")) {
    const int64_t axis_attr = a.attrs().get_int("axis", 0);
    const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + x.rank() : axis_attr);
    dim = x.dim(axis);
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  const int64_t n = std::min(dim, cond.numel());
  int64_t kept = 0;
  for (int64_t j = 0; j < n; ++j) kept += c[j] ? 1 : 0;
  if (y.numel() != outer * kept * inner) return a.error("output size does not match the condition");
  const size_t block = static_cast<size_t>(inner) * esize;
  int64_t dst = 0;
  for (int64_t o = 0; o < outer && block; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      if (!c[j]) continue;
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(dst) * block,
                  static_cast<const char*>(x.raw()) + static_cast<size_t>(o * dim + j) * block, block);
      ++dst;
    }
  }
  return ok_status();
}

}  // namespace

void register_select_kernels(KernelRegistry& registry) {
  registry.add("NonZero", nonzero);
  registry.add("Compress", compress);
}

}  // namespace nfuse::backends::ref
