// Activations: Relu family, sigmoid/tanh family, Softplus/Softsign/Mish, Shrink, PRelu, Clip.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

template <uint32_t kAllowed>
Status infer_activation(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllowed));
  return infer_same_as_input0(ctx);
}

// The slope broadcasts onto X (unidirectionally): the output always has X's shape. Before
// opset 7 a 1-D slope of X's channel count applies per channel (axis 1), as PyTorch exports it.
Status infer_prelu(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kNumericDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 1));
  const ir::Shape& x = ctx.shape(0);
  const ir::Shape& slope = ctx.shape(1);
  const bool legacy_channel = ctx.node.opset > 0 && ctx.node.opset < 7 && slope.rank_known() &&
                              slope.rank() == 1 && x.rank_known() && x.rank() >= 2;
  if (!legacy_channel && x.is_static() && slope.is_static()) {
    auto b = broadcast_shapes({&x, &slope});
    if (!b.ok() || !(*b == x)) {
      return ctx.error("slope " + slope.to_string() + " does not broadcast to X " + x.to_string());
    }
  }
  return infer_same_as_input0(ctx);
}

// Opset >= 11 takes min and max as optional scalar inputs; earlier opsets as float attributes.
Status infer_clip(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kNumericDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 2));
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    const ir::Shape& s = ctx.shape(i);
    if (s.rank_known()) {
      auto n = s.static_numel();
      if (n && *n != 1) return ctx.error("min/max must be scalars, got " + s.to_string());
    }
    if (const ir::Tensor* v = ctx.value(i); v && v->numel() != 1) {
      return ctx.error("min/max must be scalars");
    }
  }
  return infer_same_as_input0(ctx);
}

ir::OpSchema activation_schema(const char* op, ir::InferFn infer, int max_inputs = 1) {
  return ir::OpSchema{.op_type = op, .min_inputs = 1, .max_inputs = max_inputs, .infer = infer};
}

}  // namespace

void register_activation_ops(ir::OpRegistry& registry) {
  for (const char* op : {"LeakyRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus",
                         "Softsign", "ThresholdedRelu", "Celu", "Mish"}) {
    registry.add(activation_schema(op, infer_activation<kFloatDTypes>));
  }
  registry.add(activation_schema("Relu", infer_activation<kSignedDTypes>));
  registry.add(activation_schema("Shrink", infer_activation<kNumericDTypes>));
  registry.add(ir::OpSchema{.op_type = "PRelu", .min_inputs = 2, .max_inputs = 2, .infer = infer_prelu});
  registry.add(activation_schema("Clip", infer_clip, 3));
}

}  // namespace nfuse::ops
