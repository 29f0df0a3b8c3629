// Concat and Split: each tensor is viewed as [outer, dim, inner] around the axis.
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"
#include "ops/tensor_params.h"

namespace nfuse::backends::ref {
namespace {

int64_t outer_of(const ir::Tensor& t, int axis) {
  int64_t n = 1;
  for (int i = 0; i < axis; ++i) n *= t.dim(i);
  return n;
}
int64_t inner_of(const ir::Tensor& t, int axis) {
  int64_t n = 1;
  for (int i = axis + 1; i < t.rank(); ++i) n *= t.dim(i);
  return n;
}
int normalized(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

Status concat(KernelArgs& a) {
  ir::Tensor& y = a.out(0);
  const int axis = normalized(a.attrs().get_int("axis", 1), y.rank());
  const size_t esize = ir::dtype_size(y.dtype());
  const int64_t outer = outer_of(y, axis);
  const int64_t inner = inner_of(y, axis);
  int64_t offset = 0;  // along the axis, in the output
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    const ir::Tensor& x = a.in(static_cast<int>(k));
    if (x.rank() != y.rank() || offset + x.dim(axis) > y.dim(axis)) return a.error("input shapes do not concatenate");
    const size_t row = static_cast<size_t>(x.dim(axis) * inner) * esize;
    for (int64_t o = 0; o < outer && row; ++o) {
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>((o * y.dim(axis) + offset) * inner) * esize,
                  static_cast<const char*>(x.raw()) + static_cast<size_t>(o) * row, row);
    }
    offset += x.dim(axis);
  }
  return ok_status();
}

Status split(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const int axis = normalized(a.attrs().get_int("axis", 0), x.rank());
  const size_t esize = ir::dtype_size(x.dtype());
  const int64_t outer = outer_of(x, axis);
  const int64_t inner = inner_of(x, axis);
  // Sizes come from the attributes, not the outputs: an omitted output has no tensor.
  auto sizes = ops::compute_split(x.dim(axis), a.num_outputs(),
                                  ops::ints_from_attr_or_input(a.attrs(), "split", a.has_in(1) ? &a.in(1) : nullptr));
  if (!sizes.ok()) return a.error(sizes.status().message());
  int64_t offset = 0;
  for (int k = 0; k < a.num_outputs(); ++k) {
    const int64_t n = (*sizes)[static_cast<size_t>(k)];
    if (!a.outputs[static_cast<size_t>(k)] || a.out(k).empty()) {
      offset += n;
      continue;
    }
    ir::Tensor& y = a.out(k);
    if (y.rank() != x.rank() || y.dim(axis) != n) return a.error("output shape does not match the split");
    const size_t row = static_cast<size_t>(n * inner) * esize;
    for (int64_t o = 0; o < outer && row; ++o) {
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(o) * row,
                  static_cast<const char*>(x.raw()) + static_cast<size_t>((o * x.dim(axis) + offset) * inner) * esize,
                  row);
    }
    offset += n;
  }
  return ok_status();
}

}  // namespace

void register_concat_split_kernels(KernelRegistry& registry) {
  registry.add("Concat", concat);
  registry.add("Split", split);
}

}  // namespace nfuse::backends::ref
