// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: input [N, C, d1..dk], target
// [N, d1..dk] of class indices, optional weight [C]. reduction "none" gives the target's shape,
// "sum" and "mean" a scalar. SoftmaxCrossEntropyLoss has an optional second output, the
// log-softmax of the scores over axis 1 (the scores' shape).
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_loss(const ir::Node& node) {
  const std::string reduction = node.attrs.get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return invalid_model(node.label() + ": reduction '" + reduction + "' is not none, sum or mean");
  }
  return ok_status();
}

// Checks that target (and weight) fit input where dims are known.
Status check_loss_shapes(const ir::InferContext& ctx) {
  const ir::Shape& x = ctx.shape(0);
  const ir::Shape& t = ctx.shape(1);
  if (x.rank_known() && x.rank() < 2) return ctx.error("input must have rank >= 2 ([N, C, ...])");
  if (x.rank_known() && t.rank_known()) {
    if (t.rank() != x.rank() - 1) return ctx.error("target rank must be input rank - 1");
    for (int i = 0; i < t.rank(); ++i) {
      const ir::Dim& xd = x[i == 0 ? 0 : i + 1];
      if (xd.is_static() && t[i].is_static() && xd.value != t[i].value) {
        return ctx.error("target dim " + std::to_string(i) + " does not match the input");
      }
    }
  }
  if (ctx.has_input(2) && ctx.shape(2).rank_known()) {
    const ir::Shape& w = ctx.shape(2);
    if (w.rank() != 1) return ctx.error("weight must be 1-D [C]");
    if (x.rank_known() && x[1].is_static() && w[0].is_static() && x[1].value != w[0].value) {
      return ctx.error("weight length does not match C");
    }
  }
  return ok_status();
}

Status infer_loss(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, dtype_bit(ir::DType::kI32) | dtype_bit(ir::DType::kI64)));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 2, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 2, 2));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_loss_shapes(ctx));
  const ir::Shape& x = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  if (ctx.attrs().get_string("reduction", "mean") != "none") {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>{});
  } else if (ctx.shape(1).rank_known()) {
    ctx.output(0).shape = ctx.shape(1);
    if (x.rank_known()) {  // prefer whichever of input and target knows a dim
      for (int i = 0; i < ctx.shape(1).rank(); ++i) {
        const ir::Dim& xd = x[i == 0 ? 0 : i + 1];
        ir::Dim& o = ctx.output(0).shape[i];
        if (!o.is_static() && o.symbol.empty() && (xd.is_static() || !xd.symbol.empty())) o = xd;
      }
    }
  } else if (x.rank_known()) {
    std::vector<ir::Dim> dims = x.dims();
    dims.erase(dims.begin() + 1);
    ctx.output(0).shape = ir::Shape(std::move(dims));
  } else {
    ctx.output(0).shape = ir::Shape::unknown_rank();
  }
  if (ctx.num_outputs() > 1) ctx.output(1) = ctx.input(0);  // log_prob
  return ok_status();
}

}  // namespace

void register_loss_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "NegativeLogLikelihoodLoss",
                            .min_inputs = 2,
                            .max_inputs = 3,
                            .verify = verify_loss,
                            .infer = infer_loss});
  registry.add(ir::OpSchema{.op_type = "SoftmaxCrossEntropyLoss",
                            .min_inputs = 2,
                            .max_inputs = 3,
                            .min_outputs = 1,
                            .max_outputs = 2,
                            .verify = verify_loss,
                            .infer = infer_loss});
}

}  // namespace nfuse::ops
