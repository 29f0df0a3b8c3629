// Gather, GatherElements and GatherND. Index values are data: each is range-checked here and
// an out-of-range index is an error, never a read outside the input.
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {
namespace {

int64_t product(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t i = b; i < e; ++i) n *= d[i];
  return n;
}

Status index_error(KernelArgs& a, int64_t i, int64_t dim) {
  return a.error("index " + std::to_string(i) + " is out of range for a dim of size " + std::to_string(dim));
}

Status gather(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& idx = a.in(1);
  const int64_t axis_attr = a.attrs().get_int("axis", 0);
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + x.rank() : axis_attr);
  const int64_t outer = product(x.dims(), 0, axis);
  const int64_t dim = x.dims()[axis];
  const int64_t inner = product(x.dims(), axis + 1, x.dims().size());
  const int64_t n_idx = idx.numel();
  const size_t block = static_cast<size_t>(inner) * ir::dtype_size(x.dtype());
  char* out = static_cast<char*>(a.out(0).raw());
  const char* in = static_cast<const char*>(x.raw());
  for (int64_t p = 0; p < n_idx; ++p) {
    int64_t k = idx.get_int(p);
    if (!normalize_index(k, dim)) return index_error(a, idx.get_int(p), dim);
    for (int64_t o = 0; o < outer && block; ++o) {
      std::memcpy(out + static_cast<size_t>(o * n_idx + p) * block, in + static_cast<size_t>(o * dim + k) * block,
                  block);
    }
  }
  return ok_status();
}

Status gather_elements(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& idx = a.in(1);
  const int64_t axis_attr = a.attrs().get_int("axis", 0);
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + x.rank() : axis_attr);
  if (idx.rank() != x.rank()) return a.error("data and indices must have the same rank");
  for (size_t d = 0; d < x.dims().size(); ++d) {
    if (d != axis && idx.dims()[d] > x.dims()[d]) return a.error("indices are larger than data outside the axis");
  }
  const std::vector<int64_t> strides = strides_of(x.dims());
  const size_t esize = ir::dtype_size(x.dtype());
  Status status;
  for_each_index(idx.dims(), [&](const std::vector<int64_t>& i, int64_t linear) {
    int64_t k = idx.get_int(linear);
    if (!status.ok()) return;
    if (!normalize_index(k, x.dims()[axis])) {
      status = index_error(a, idx.get_int(linear), x.dims()[axis]);
      return;
    }
    int64_t src = 0;
    for (size_t d = 0; d < i.size(); ++d) src += (d == axis ? k : i[d]) * strides[d];
    copy_elem(a.out(0).raw(), linear, x.raw(), src, esize);
  });
  return status;
}

Status gather_nd(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& idx = a.in(1);
  const size_t b = static_cast<size_t>(a.attrs().get_int("batch_dims", 0));
  const size_t q = idx.dims().size();
  const size_t m = static_cast<size_t>(idx.dims()[q - 1]);
  if (b + m > x.dims().size()) return a.error("indices address more dims than data has");
  const int64_t batches = product(x.dims(), 0, b);
  const int64_t tuples = product(idx.dims(), b, q - 1);
  const int64_t slice = product(x.dims(), b + m, x.dims().size());
  const int64_t batch_stride = product(x.dims(), b, x.dims().size());
  const std::vector<int64_t> strides = strides_of(x.dims());
  const size_t block = static_cast<size_t>(slice) * ir::dtype_size(x.dtype());
  char* out = static_cast<char*>(a.out(0).raw());
  const char* in = static_cast<const char*>(x.raw());
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t tuple = (bi * tuples + t) * static_cast<int64_t>(m);
      int64_t src = bi * batch_stride;
      for (size_t j = 0; j < m; ++j) {
        int64_t k = idx.get_int(tuple + static_cast<int64_t>(j));
        const int64_t dim = x.dims()[b + j];
        if (!normalize_index(k, dim)) return index_error(a, idx.get_int(tuple + static_cast<int64_t>(j)), dim);
        src += k * strides[b + j];
      }
      if (block) {
        std::memcpy(out + static_cast<size_t>(bi * tuples + t) * block,
                    in + static_cast<size_t>(src) * ir::dtype_size(x.dtype()), block);
      }
    }
  }
  return ok_status();
}

}  // namespace

void register_gather_kernels(KernelRegistry& registry) {
  registry.add("Gather", gather);
  registry.add("GatherElements", gather_elements);
  registry.add("GatherND", gather_nd);
}

}  // namespace nfuse::backends::ref
