// TopK along one axis: a stable sort of each line, so equal values keep the smaller index
// first (the ONNX rule). NaN counts as larger than every number.
#include <algorithm>
#include <numeric>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_util.h"
#include "ops/topk_order.h"

namespace nfuse::backends::ref {
namespace {

Status topk(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& values = a.out(0);
  const bool has_indices = a.num_outputs() > 1 && !a.out(1).empty();
  const int64_t axis_attr = a.attrs().get_int("axis", -1);
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + x.rank() : axis_attr);
  const bool largest = a.attrs().get_int("largest", 1) != 0;
  const int64_t n = x.dim(axis);
  const int64_t k = values.dim(axis);
  if (k > n) return a.error("k exceeds the axis size");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  bool ok = ir::visit_dtype(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = values.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        auto at = [&](int64_t j) { return load(in[base + j * inner]); };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
          return largest ? ops::topk_greater(at(p), at(q)) : ops::topk_greater(at(q), at(p));
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = order[static_cast<size_t>(j)];
          const int64_t dst = o * k * inner + j * inner + i;
          out[dst] = in[base + src * inner];
          if (has_indices) a.out(1).data<int64_t>()[dst] = src;
        }
      }
    }
  });
  if (!ok) return a.error("unsupported dtype");
  return ok_status();
}

}  // namespace

void register_topk_kernels(KernelRegistry& registry) { registry.add("TopK", topk); }

}  // namespace nfuse::backends::ref
