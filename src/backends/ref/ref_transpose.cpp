// Transpose, DepthToSpace and SpaceToDepth: each is one permutation of a reshaped view.
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {
namespace {

Status transpose(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  std::vector<int64_t> perm = a.attrs().get_ints("perm");
  if (!a.attrs().has("perm"))
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != x.rank()) return a.error("perm does not match the input rank");
  permute_copy(x, x.dims(), perm, a.out(0));
  return ok_status();
}

Status depth_to_space(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const int64_t b = a.attrs().get_int("blocksize", 1);
  if (x.rank() != 4 || b < 1 || x.dim(1) % (b * b) != 0) return a.error("bad input shape or blocksize");
  const int64_t n = x.dim(0), c = x.dim(1) / (b * b), h = x.dim(2), w = x.dim(3);
  if (a.attrs().get_string("mode", "DCR") == "CRD") {
    permute_copy(x, {n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3}, a.out(0));
  } else {
    permute_copy(x, {n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2}, a.out(0));
  }
  return ok_status();
}

Status space_to_depth(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const int64_t b = a.attrs().get_int("blocksize", 1);
  if (x.rank() != 4 || b < 1 || x.dim(2) % b != 0 || x.dim(3) % b != 0) return a.error("bad input shape or blocksize");
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / b, w = x.dim(3) / b;
  permute_copy(x, {n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4}, a.out(0));
  return ok_status();
}

}  // namespace

void register_transpose_kernels(KernelRegistry& registry) {
  registry.add("Transpose", transpose);
  registry.add("DepthToSpace", depth_to_space);
  registry.add("SpaceToDepth", space_to_depth);
}

}  // namespace nfuse::backends::ref
