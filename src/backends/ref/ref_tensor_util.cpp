#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {

void permute_copy(const ir::Tensor& in, const std::vector<int64_t>& view, const std::vector<int64_t>& perm,
                  ir::Tensor& out) {
  const size_t esize = ir::dtype_size(in.dtype());
  const std::vector<int64_t> in_strides = strides_of(view);
  std::vector<int64_t> out_dims(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_dims[i] = view[static_cast<size_t>(perm[i])];
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  for_each_index(out_dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * strides[d];
    copy_elem(out.raw(), linear, in.raw(), src, esize);
  });
}

}  // namespace nfuse::backends::ref
