// Expand (numpy broadcast to the output dims) and Tile (output index modulo input dims).
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {
namespace {

Status expand(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  if (x.rank() > y.rank()) return a.error("output rank is below the input rank");
  const size_t esize = ir::dtype_size(x.dtype());
  for_each_broadcast(y.dims(), {x.dims()}, [&](int64_t i, const std::vector<int64_t>& off) {
    copy_elem(y.raw(), i, x.raw(), off[0], esize);
  });
  return ok_status();
}

Status tile(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  if (x.rank() != y.rank()) return a.error("output rank differs from the input rank");
  const std::vector<int64_t> strides = strides_of(x.dims());
  const size_t esize = ir::dtype_size(x.dtype());
  for_each_index(y.dims(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (idx[d] % x.dims()[d]) * strides[d];
    copy_elem(y.raw(), linear, x.raw(), src, esize);
  });
  return ok_status();
}

}  // namespace

void register_expand_tile_kernels(KernelRegistry& registry) {
  registry.add("Expand", expand);
  registry.add("Tile", tile);
}

}  // namespace nfuse::backends::ref
