// Reference kernels for Softmax, LogSoftmax and Hardmax: each row of the [outer, n, inner]
// view (ops::softmax_geometry) is normalised along n, in double, max-subtracted so exp never
// overflows.
#include <cmath>
#include <limits>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"
#include "ops/elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

enum class Kind { kSoftmax, kLogSoftmax, kHardmax };

template <Kind K, typename T>
void normalise_row(const T* x, T* y, int64_t n, int64_t stride) {
  double max = -std::numeric_limits<double>::infinity();
  int64_t arg = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double v = to_double(x[k * stride]);
    if (v > max) {  // first maximum wins, as numpy's argmax
      max = v;
      arg = k;
    }
  }
  if (K == Kind::kHardmax) {
    for (int64_t k = 0; k < n; ++k) y[k * stride] = from_double<T>(k == arg ? 1.0 : 0.0);
    return;
  }
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += std::exp(to_double(x[k * stride]) - max);
  for (int64_t k = 0; k < n; ++k) {
    const double shifted = to_double(x[k * stride]) - max;
    y[k * stride] = from_double<T>(K == Kind::kSoftmax ? std::exp(shifted) / sum : shifted - std::log(sum));
  }
}

template <Kind K>
Status softmax_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  NFUSE_ASSIGN_OR_RETURN(ops::SoftmaxGeometry g, ops::softmax_geometry(a.node, x.dims()));
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      for (int64_t o = 0; o < g.outer; ++o) {
        for (int64_t i = 0; i < g.inner; ++i) {
          const int64_t base = o * g.n * g.inner + i;
          normalise_row<K>(x.data<T>() + base, a.out(0).data<T>() + base, g.n, g.inner);
        }
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

}  // namespace

void register_softmax_kernels(KernelRegistry& registry) {
  registry.add("Softmax", softmax_kernel<Kind::kSoftmax>);
  registry.add("LogSoftmax", softmax_kernel<Kind::kLogSoftmax>);
  registry.add("Hardmax", softmax_kernel<Kind::kHardmax>);
}

}  // namespace nfuse::backends::ref
