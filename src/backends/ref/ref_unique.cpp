// Unique: runs compute_unique and copies the selected slices.
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "ops/unique_util.h"

namespace nfuse::backends::ref {
namespace {

void write_i64(KernelArgs& a, int i, const std::vector<int64_t>& v) {
  if (i >= a.num_outputs() || a.out(i).empty()) return;
  for (size_t k = 0; k < v.size(); ++k) a.out(i).data<int64_t>()[k] = v[k];
}

Status unique(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  std::optional<int> axis;
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (a.attrs().has("axis")) {
    const int64_t v = a.attrs().get_int("axis", 0);
    axis = static_cast<int>(v < 0 ? v + x.rank() : v);
    n = x.dim(*axis);
    for (int d = 0; d < *axis; ++d) outer *= x.dim(d);
    for (int d = *axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  const ops::UniqueResult r = ops::compute_unique(x, axis, a.attrs().get_int("sorted", 1) != 0);
  const auto count = static_cast<int64_t>(r.first.size());
  ir::Tensor& y = a.out(0);
  if (y.numel() != outer * count * inner) return a.error("output size does not match the unique count");
  const size_t block = static_cast<size_t>(inner) * ir::dtype_size(x.dtype());
  for (int64_t o = 0; o < outer && block; ++o) {
    for (int64_t u = 0; u < count; ++u) {
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(o * count + u) * block,
                  static_cast<const char*>(x.raw()) +
                      static_cast<size_t>(o * n + r.first[static_cast<size_t>(u)]) * block,
                  block);
    }
  }
  write_i64(a, 1, r.first);
  write_i64(a, 2, r.inverse);
  write_i64(a, 3, r.counts);
  return ok_status();
}

}  // namespace

void register_unique_kernels(KernelRegistry& registry) { registry.add("Unique", unique); }

}  // namespace nfuse::backends::ref
