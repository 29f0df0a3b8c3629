// Reference kernel for CumSum: floats accumulate in double, integers wrap.
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::ref {
namespace {

Status cumsum_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  if (a.in(1).numel() != 1) return a.error("axis must be a scalar");
  auto axis = ops::normalize_axis(a.in(1).get_int(0), x.rank());
  if (!axis) return a.error("axis is out of range");
  const bool exclusive = a.attrs().get_int("exclusive", 0) != 0;
  const bool reverse = a.attrs().get_int("reverse", 0) != 0;
  int64_t outer = 1, n = x.dim(*axis), inner = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < *axis) outer *= x.dim(d);
    if (d > *axis) inner *= x.dim(d);
  }
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = std::conditional_t<is_float_v<T>, double, T>;
      auto add = [](Acc acc, T v) -> Acc {
        if constexpr (is_float_v<T>) return acc + to_double(v);
        else return wrap_add(acc, v);
      };
      const T* xs = x.data<T>();
      T* out = a.out(0).data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
          Acc acc{};
          for (int64_t step = 0; step < n; ++step) {
            const int64_t k = reverse ? n - 1 - step : step;
            const int64_t idx = (o * n + k) * inner + in;
            const T v = xs[idx];
            if (!exclusive) acc = add(acc, v);
            if constexpr (is_float_v<T>) out[idx] = from_double<T>(acc);
            else out[idx] = acc;
            if (exclusive) acc = add(acc, v);
          }
        }
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

}  // namespace

void register_cumsum_kernels(KernelRegistry& registry) { registry.add("CumSum", cumsum_kernel); }

}  // namespace nfuse::backends::ref
