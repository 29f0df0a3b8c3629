// Transpose: a permutation of the dims (default: reversed).
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status infer_transpose(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  const bool has_perm = ctx.attrs().has("perm");
  std::vector<int64_t> perm = ctx.attrs().get_ints("perm");
  if (!in.rank_known()) {
    ctx.output(0).shape = has_perm && perm.size() <= 64 ? ir::Shape(std::vector<ir::Dim>(perm.size()))
                                                         : ir::Shape::unknown_rank();
    return ok_status();
  }
  const int r = in.rank();
  if (!has_perm) {
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != r) {
    return ctx.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  }
  std::vector<bool> seen(static_cast<size_t>(r), false);
  std::vector<ir::Dim> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[static_cast<size_t>(p)]) return ctx.error("perm is not a permutation of 0..rank-1");
    seen[static_cast<size_t>(p)] = true;
    out.push_back(in[static_cast<int>(p)]);
  }
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

}  // namespace

void register_transpose_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Transpose", .infer = infer_transpose});
}

}  // namespace nfuse::ops
