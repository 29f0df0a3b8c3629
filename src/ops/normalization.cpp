// Normalization ops: BatchNormalization, InstanceNormalization, LayerNormalization,
// MeanVarianceNormalization, LRN, LpNormalization.
#include "ops/normalization.h"
#include "ops/builtin_ops.h"

#include "ops/op_helpers.h"

namespace nfuse::ops {

std::optional<ir::DType> stash_dtype(int64_t stash_type) {
  switch (stash_type) {
    case 1: return ir::DType::kF32;
    case 10: return ir::DType::kF16;
    case 11: return ir::DType::kF64;
    case 16: return ir::DType::kBF16;
    default: return std::nullopt;
  }
}

bool batch_norm_training(const ir::Node& node) {
  if (node.opset >= 14 || node.opset == 0) return node.attrs.get_int("training_mode", 0) == 1;
  // Before opset 14 the training-mode form is the one with the running/saved statistics outputs.
  for (int i = 1; i < node.num_outputs(); ++i)
    if (node.output(i)) return true;
  return false;
}

namespace {

Status check_float_inputs(const ir::InferContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && !ir::dtype_is_float(ctx.dtype(i))) {
      return ctx.error("input " + std::to_string(i) + " must be a float type, got " +
                       std::string(ir::dtype_name(ctx.dtype(i))));
    }
  }
  return ok_status();
}

Status verify_batch_norm(const ir::Node& node) {
  const int64_t training = node.attrs.get_int("training_mode", 0);
  if (training != 0 && training != 1) return invalid_model(node.label() + ": 'training_mode' must be 0 or 1");
  if (batch_norm_training(node) && node.opset < 14 && node.opset != 0) {
    return unsupported(node.label() + ": training-mode BatchNormalization before opset 14 (saved mean/variance "
                                      "outputs) is not supported; nfuse runs inference");
  }
  return ok_status();
}

// Y like X; in training mode (opset 14+) running_mean and running_var like input_mean.
Status infer_batch_norm(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_float_inputs(ctx));
  const ir::Shape& xs = ctx.shape(0);
  if (xs.rank_known() && xs.rank() < 2) return ctx.error("input must have rank >= 2 (N, C, ...)");
  ctx.output(0) = ctx.input(0);
  for (int i = 1; i < ctx.num_outputs() && i < 3; ++i) ctx.output(i) = ctx.input(3);
  return ok_status();
}

Status infer_instance_norm(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_float_inputs(ctx));
  const ir::Shape& xs = ctx.shape(0);
  if (xs.rank_known() && xs.rank() < 3) return ctx.error("input must have rank >= 3 (N, C, spatial...)");
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

Status verify_layer_norm(const ir::Node& node) {
  if (!stash_dtype(node.attrs.get_int("stash_type", 1))) {
    return unsupported(node.label() + ": unsupported 'stash_type'");
  }
  return ok_status();
}

// Y like X; Mean and InvStdDev keep X's dims before `axis` and are 1 from there on.
Status infer_layer_norm(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_float_inputs(ctx));
  ctx.output(0) = ctx.input(0);
  const ir::DType stash = *stash_dtype(ctx.attrs().get_int("stash_type", 1));
  const ir::Shape& xs = ctx.shape(0);
  ir::Shape stats = ir::Shape::unknown_rank();
  if (xs.rank_known()) {
    auto axis = normalize_axis(ctx.attrs().get_int("axis", -1), xs.rank());
    if (!axis) return ctx.error("attribute 'axis' is out of range for rank " + std::to_string(xs.rank()));
    std::vector<ir::Dim> dims = xs.dims();
    for (int i = *axis; i < xs.rank(); ++i) dims[static_cast<size_t>(i)] = ir::Dim(1);
    stats = ir::Shape(std::move(dims));
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.output(i) = {stash, stats};
  return ok_status();
}

// Checks `axes` (MeanVarianceNormalization) against the rank when it is known.
Status infer_mvn(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_float_inputs(ctx));
  const ir::Shape& xs = ctx.shape(0);
  if (xs.rank_known()) {
    for (int64_t a : ctx.attrs().get_ints("axes", {0, 2, 3})) {
      if (!normalize_axis(a, xs.rank())) return ctx.error("axis " + std::to_string(a) + " is out of range");
    }
  }
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

Status verify_lrn(const ir::Node& node) {
  auto size = node.attrs.require_int("size");
  if (!size.ok()) return size.status().with_context(node.label());
  if (*size < 1) return invalid_model(node.label() + ": attribute 'size' must be >= 1");
  return ok_status();
}

Status infer_lrn(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_float_inputs(ctx));
  if (ctx.shape(0).rank_known() && ctx.shape(0).rank() < 2) return ctx.error("input must have rank >= 2");
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

Status verify_lp_norm(const ir::Node& node) {
  const int64_t p = node.attrs.get_int("p", 2);
  if (p != 1 && p != 2) return invalid_model(node.label() + ": attribute 'p' must be 1 or 2");
  return ok_status();
}

Status infer_lp_norm(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_float_inputs(ctx));
  const ir::Shape& xs = ctx.shape(0);
  if (xs.rank_known() && !normalize_axis(ctx.attrs().get_int("axis", -1), xs.rank())) {
    return ctx.error("attribute 'axis' is out of range");
  }
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

}  // namespace

void register_normalization_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "BatchNormalization",
                            .min_inputs = 5,
                            .max_inputs = 5,
                            .max_outputs = 5,
                            .verify = verify_batch_norm,
                            .infer = infer_batch_norm});
  registry.add(
      ir::OpSchema{.op_type = "InstanceNormalization", .min_inputs = 3, .max_inputs = 3, .infer = infer_instance_norm});
  registry.add(ir::OpSchema{.op_type = "LayerNormalization",
                            .min_inputs = 2,
                            .max_inputs = 3,
                            .max_outputs = 3,
                            .verify = verify_layer_norm,
                            .infer = infer_layer_norm});
  registry.add(ir::OpSchema{.op_type = "MeanVarianceNormalization", .infer = infer_mvn});
  registry.add(ir::OpSchema{.op_type = "LRN", .verify = verify_lrn, .infer = infer_lrn});
  registry.add(ir::OpSchema{.op_type = "LpNormalization", .verify = verify_lp_norm, .infer = infer_lp_norm});
}

}  // namespace nfuse::ops
