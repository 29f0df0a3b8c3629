// Shape and Size: write the input's dims (a [start, end) range of them) or element count.
#include <algorithm>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status shape(KernelArgs& a) {
  const int64_t r = a.in(0).rank();
  int64_t start = a.attrs().get_int("start", 0);
  int64_t end = a.attrs().get_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  ir::Tensor& y = a.out(0);
  if (y.numel() != std::max<int64_t>(end - start, 0)) return a.error("output size does not match start/end");
  for (int64_t i = 0; i < y.numel(); ++i) y.data<int64_t>()[i] = a.in(0).dim(static_cast<int>(start + i));
  return ok_status();
}

Status size(KernelArgs& a) {
  a.out(0).data<int64_t>()[0] = a.in(0).numel();
  return ok_status();
}

}  // namespace

void register_shape_ops_kernels(KernelRegistry& registry) {
  registry.add("Shape", shape);
  registry.add("Size", size);
}

}  // namespace nfuse::backends::ref
