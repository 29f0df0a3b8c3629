// Slice: output element j along a sliced axis reads input element start + j * step.
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"
#include "ops/tensor_params.h"

namespace nfuse::backends::ref {
namespace {

Status slice(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  auto input = [&](int i) { return a.has_in(i) ? &a.in(i) : nullptr; };
  auto starts = ops::ints_from_attr_or_input(a.attrs(), "starts", input(1));
  auto ends = ops::ints_from_attr_or_input(a.attrs(), "ends", input(2));
  auto axes = ops::ints_from_attr_or_input(a.attrs(), "axes", input(3));
  std::optional<std::vector<int64_t>> steps;
  if (input(4)) steps = input(4)->to_int_vector();
  if (!starts || !ends) return a.error("missing starts or ends");
  auto sliced = ops::compute_slice(x.dims(), *starts, *ends, axes, steps);
  if (!sliced.ok()) return a.error(sliced.status().message());
  const int r = x.rank();
  std::vector<int64_t> start(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  std::vector<int64_t> out_dims = x.dims();
  for (const ops::SliceAxis& s : *sliced) {
    start[static_cast<size_t>(s.axis)] = s.start;
    step[static_cast<size_t>(s.axis)] = s.step;
    out_dims[static_cast<size_t>(s.axis)] = s.count;
  }
  if (out_dims != y.dims()) return a.error("output dims do not match the slice");
  const std::vector<int64_t> strides = strides_of(x.dims());
  const size_t esize = ir::dtype_size(x.dtype());
  for_each_index(out_dims, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (start[d] + idx[d] * step[d]) * strides[d];
    copy_elem(y.raw(), linear, x.raw(), src, esize);
  });
  return ok_status();
}

}  // namespace

void register_slice_kernels(KernelRegistry& registry) { registry.add("Slice", slice); }

}  // namespace nfuse::backends::ref
