// Reference Det: LU decomposition with partial pivoting in double, per trailing [M, M] matrix.
#include <cmath>
#include <utility>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

double determinant(std::vector<double>& m, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r) {
      if (std::fabs(m[static_cast<size_t>(r * n + col)]) > std::fabs(m[static_cast<size_t>(pivot * n + col)])) pivot = r;
    }
    const double p = m[static_cast<size_t>(pivot * n + col)];
    if (p == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t k = 0; k < n; ++k) std::swap(m[static_cast<size_t>(pivot * n + k)], m[static_cast<size_t>(col * n + k)]);
      det = -det;
    }
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      const double f = m[static_cast<size_t>(r * n + col)] / p;
      for (int64_t k = col; k < n; ++k) m[static_cast<size_t>(r * n + k)] -= f * m[static_cast<size_t>(col * n + k)];
    }
  }
  return det;
}

Status det(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) return a.error("input must be [*, M, M]");
  const int64_t n = x.dim(x.rank() - 1);
  const int64_t count = n * n;
  if (y.numel() * count != x.numel() && n != 0) return a.error("output size does not match");
  std::vector<double> m(static_cast<size_t>(count));
  for (int64_t b = 0; b < y.numel(); ++b) {
    for (int64_t i = 0; i < count; ++i) m[static_cast<size_t>(i)] = x.get_double(b * count + i);
    ir::store_from_double(y.dtype(), y.raw(), b, determinant(m, n));
  }
  return ok_status();
}

}  // namespace

void register_det_kernels(KernelRegistry& registry) { registry.add("Det", det); }

}  // namespace nfuse::backends::ref
