// The quantized element-wise, concat and pooling ops of ONNX Runtime's "com.microsoft" domain,
// with ORT's contrib-op signatures so QOperator models exported for ORT import unchanged, and so
// the fuse_qdq_binary / fuse_qdq_concat / fuse_qdq_pool passes have one integer op to produce:
//
//   QLinearAdd, QLinearMul   A, A_scale, A_zp?, B, B_scale, B_zp?, C_scale, C_zp? -> C
//                            (numpy broadcasting of A and B; T = u8 | i8 for A, B and C as
//                            ONNX Runtime's; nfuse also takes u16 / i16, which fuse_qdq_binary
//                            writes for W8A16 graphs)
//   QLinearConcat            Y_scale, Y_zp, then (X_i, X_i_scale, X_i_zp) triples -> Y; attr axis
//                            (u8 / i8 as ONNX Runtime's; nfuse also takes u16 / i16, which
//                            fuse_qdq_concat writes for W8A16 graphs)
//   QLinearGlobalAveragePool X, x_scale, x_zp, y_scale, y_zp -> Y; attr channels_last (0)
//   QLinearAveragePool       X, x_scale, x_zp?, y_scale, y_zp? -> Y; AveragePool's attributes
//                            plus channels_last (0)
//
// Scales are f32, zero points have their data's dtype and are 0 when omitted (so min_inputs is
// 1 where an optional zero point sits between required inputs; infer checks those). The
// arithmetic is defined in kernels/quant_arithmetic.h. channels_last = 1 means the input is
// N, spatial..., C (ORT's NHWC variants); the output keeps the input's layout.
#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

constexpr const char* kMsDomain = "com.microsoft";

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

// Input `scale` is f32 and input `zp`, when present, has dtype `t`.
Status check_qparams(const ir::InferContext& ctx, int scale, int zp, ir::DType t) {
  if (!ctx.has_input(scale)) return ctx.error("scale input " + std::to_string(scale) + " is missing");
  if (ctx.dtype(scale) != ir::DType::kF32) return ctx.error("scale input " + std::to_string(scale) + " must be f32");
  if (ctx.has_input(zp) && ctx.dtype(zp) != t) {
    return ctx.error("zero point input " + std::to_string(zp) + " must have dtype " + std::string(ir::dtype_name(t)));
  }
  return ok_status();
}

bool is_q16(ir::DType t) { return t == ir::DType::kU16 || t == ir::DType::kI16; }

// QLinearAdd / QLinearMul: A (0), B (3) and C share one dtype: u8, i8, u16 or i16.
Status infer_qlinear_binary(ir::InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(3)) return ctx.error("A and B are required");
  const ir::DType t = ctx.dtype(0);
  if ((!is_q8(t) && !is_q16(t)) || ctx.dtype(3) != t)
    return ctx.error("A and B must have one dtype: u8, i8, u16 or i16");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_qparams(ctx, 1, 2, t));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_qparams(ctx, 4, 5, t));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_qparams(ctx, 6, 7, t));
  NFUSE_ASSIGN_OR_RETURN(ir::Shape shape, broadcast_shapes({&ctx.shape(0), &ctx.shape(3)}));
  ctx.output(0) = {t, std::move(shape)};
  return ok_status();
}

Status verify_qlinear_concat(const ir::Node& node) {
  if (!node.attrs.has("axis")) return invalid_model(node.label() + ": missing attribute 'axis'");
  if (node.inputs.size() < 5 || (node.inputs.size() - 2) % 3 != 0) {
    return invalid_model(node.label() + ": inputs must be Y_scale, Y_zero_point and (X, scale, zero point) triples");
  }
  return ok_status();
}

Status infer_qlinear_concat(ir::InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("Y_scale and Y_zero_point are required");
  const ir::DType t = ctx.dtype(1);
  if (!is_q8(t) && !is_q16(t)) return ctx.error("Y_zero_point must be u8, i8, u16 or i16");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_qparams(ctx, 0, 1, t));
  int rank = -1;
  for (int i = 2; i < ctx.num_inputs(); i += 3) {
    if (!ctx.has_input(i) || !ctx.has_input(i + 1) || !ctx.has_input(i + 2)) {
      return ctx.error("input triple at " + std::to_string(i) + " is incomplete");
    }
    if (ctx.dtype(i) != t) return ctx.error("input " + std::to_string(i) + " must have Y's dtype");
    NFUSE_RETURN_IF_ERROR_PLAIN(check_qparams(ctx, i + 1, i + 2, t));
    if (!ctx.shape(i).rank_known()) continue;
    if (rank >= 0 && ctx.shape(i).rank() != rank) return ctx.error("inputs have different ranks");
    rank = ctx.shape(i).rank();
  }
  if (rank < 0) {
    ctx.output(0) = {t, ir::Shape::unknown_rank()};
    return ok_status();
  }
  const int64_t axis_attr = ctx.attrs().get_int("axis", 1);
  auto axis = normalize_axis(axis_attr, rank);
  if (!axis) return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank));
  std::vector<ir::Dim> out(static_cast<size_t>(rank));
  int64_t concat = 0;
  bool concat_known = true;
  for (int i = 2; i < ctx.num_inputs(); i += 3) {
    const ir::Shape& s = ctx.shape(i);
    if (!s.rank_known()) {
      concat_known = false;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      const ir::Dim& dim = s[d];
      if (d == *axis) {
        concat_known = concat_known && dim.is_static();
        if (dim.is_static()) concat += dim.value;
        continue;
      }
      ir::Dim& o = out[static_cast<size_t>(d)];
      if (dim.is_static() && o.is_static() && o.value != dim.value) {
        return ctx.error("inputs disagree on dim " + std::to_string(d));
      }
      if (!o.is_static() && (dim.is_static() || !dim.symbol.empty())) o = dim;
    }
  }
  if (concat_known) out[static_cast<size_t>(*axis)] = ir::Dim(concat);
  ctx.output(0) = {t, ir::Shape(std::move(out))};
  return ok_status();
}

Status check_channels_last(const ir::Node& node) {
  const int64_t cl = node.attrs.get_int("channels_last", 0);
  if (cl != 0 && cl != 1) return invalid_model(node.label() + ": attribute 'channels_last' must be 0 or 1");
  return ok_status();
}

// Pooling inputs: X (0), x_scale (1), x_zp (2), y_scale (3), y_zp (4); Y has X's dtype.
Status check_pool_inputs(const ir::InferContext& ctx) {
  const ir::DType t = ctx.dtype(0);
  if (!is_q8(t)) return ctx.error("X must be u8 or i8");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_qparams(ctx, 1, 2, t));
  return check_qparams(ctx, 3, 4, t);
}

Status infer_qlinear_global_average_pool(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_pool_inputs(ctx));
  const ir::Shape& xs = ctx.shape(0);
  if (!xs.rank_known()) {
    ctx.output(0) = {ctx.dtype(0), ir::Shape::unknown_rank()};
    return ok_status();
  }
  if (xs.rank() < 2) return ctx.error("input must have rank >= 2");
  const bool channels_last = ctx.attrs().get_int("channels_last", 0) == 1;
  std::vector<ir::Dim> dims(static_cast<size_t>(xs.rank()), ir::Dim(1));
  dims[0] = xs[0];
  const int c = channels_last ? xs.rank() - 1 : 1;
  dims[static_cast<size_t>(c)] = xs[c];
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(dims))};
  return ok_status();
}

Status verify_qlinear_average_pool(const ir::Node& node) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_channels_last(node));
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (!parse_auto_pad(auto_pad)) {
    return invalid_model(node.label() + ": attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  }
  if (!node.attrs.has("kernel_shape")) return invalid_model(node.label() + ": attribute 'kernel_shape' is required");
  const int64_t count_include_pad = node.attrs.get_int("count_include_pad", 0);
  if (count_include_pad != 0 && count_include_pad != 1) {
    return invalid_model(node.label() + ": attribute 'count_include_pad' must be 0 or 1");
  }
  return ok_status();
}

Status infer_qlinear_average_pool(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_pool_inputs(ctx));
  const ir::Shape& xs = ctx.shape(0);
  if (!xs.rank_known()) {
    ctx.output(0) = {ctx.dtype(0), ir::Shape::unknown_rank()};
    return ok_status();
  }
  if (xs.rank() < 3) return ctx.error("input must have rank >= 3 (N, C, spatial...)");
  const bool channels_last = ctx.attrs().get_int("channels_last", 0) == 1;
  auto w = read_pool_window_attrs(ctx.attrs(), xs.rank() - 2);
  if (!w.ok()) return ctx.error(w.status().message());
  const int first_spatial = channels_last ? 1 : 2;
  std::vector<ir::Dim> dims = xs.dims();
  for (int a = 0; a < xs.rank() - 2; ++a) {
    ir::Dim& d = dims[static_cast<size_t>(first_spatial + a)];
    if (!d.is_static()) {
      d = ir::Dim();
      continue;
    }
    auto ax = forward_window_axis(*w, a, d.value);
    if (!ax.ok()) return ctx.error(ax.status().message());
    d = ir::Dim(ax->out);
  }
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(dims))};
  return ok_status();
}

}  // namespace

void register_qlinear_binary_concat_pool_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "QLinearAdd", .min_inputs = 1, .max_inputs = 8, .infer = infer_qlinear_binary, .domain = kMsDomain});
  registry.add(ir::OpSchema{
      .op_type = "QLinearMul", .min_inputs = 1, .max_inputs = 8, .infer = infer_qlinear_binary, .domain = kMsDomain});
  registry.add(ir::OpSchema{.op_type = "QLinearConcat",
                            .min_inputs = 5,
                            .max_inputs = 1 << 16,
                            .verify = verify_qlinear_concat,
                            .infer = infer_qlinear_concat,
                            .domain = kMsDomain});
  registry.add(ir::OpSchema{.op_type = "QLinearGlobalAveragePool",
                            .min_inputs = 5,
                            .max_inputs = 5,
                            .verify = check_channels_last,
                            .infer = infer_qlinear_global_average_pool,
                            .domain = kMsDomain});
  registry.add(ir::OpSchema{.op_type = "QLinearAveragePool",
                            .min_inputs = 1,
                            .max_inputs = 5,
                            .verify = verify_qlinear_average_pool,
                            .infer = infer_qlinear_average_pool,
                            .domain = kMsDomain});
}

}  // namespace nfuse::ops
