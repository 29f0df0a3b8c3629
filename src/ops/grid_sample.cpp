// GridSample (opset 16, 2-D): X [N, C, H, W] sampled at grid [N, H_out, W_out, 2] of normalised
// (x, y) in [-1, 1] gives [N, C, H_out, W_out]. Modes bilinear/nearest/bicubic (opset 20 names
// linear/cubic accepted too), padding zeros/border/reflection, align_corners.
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_grid_sample(const ir::Node& node) {
  const std::string mode = node.attrs.get_string("mode", "bilinear");
  if (mode != "bilinear" && mode != "linear" && mode != "nearest" && mode != "bicubic" && mode != "cubic") {
    return invalid_model(node.label() + ": unknown mode '" + mode + "'");
  }
  const std::string padding = node.attrs.get_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return invalid_model(node.label() + ": unknown padding_mode '" + padding + "'");
  }
  return ok_status();
}

Status infer_grid_sample(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kFloatDTypes));
  const ir::Shape& x = ctx.shape(0);
  const ir::Shape& g = ctx.shape(1);
  if (x.rank_known() && x.rank() != 4) return unsupported(ctx.node.label() + ": only 4-D input (2-D sampling) is supported");
  if (g.rank_known() && (g.rank() != 4 || (g[3].is_static() && g[3].value != 2))) {
    return ctx.error("grid must be [N, H_out, W_out, 2]");
  }
  ctx.output(0).dtype = ctx.dtype(0);
  std::vector<ir::Dim> dims(4);
  if (x.rank_known()) dims[0] = x[0], dims[1] = x[1];
  if (g.rank_known()) {
    if (!dims[0].is_static()) dims[0] = g[0];
    dims[2] = g[1], dims[3] = g[2];
  }
  ctx.output(0).shape = ir::Shape(std::move(dims));
  return ok_status();
}

}  // namespace

void register_grid_sample_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "GridSample",
                            .min_inputs = 2,
                            .max_inputs = 2,
                            .verify = verify_grid_sample,
                            .infer = infer_grid_sample});
}

}  // namespace nfuse::ops
