// Conv, ConvTranspose and their quantized forms ConvInteger, QLinearConv and nfuse's
// DynamicQuantConv: attribute checks and shape inference. The window arithmetic lives in conv_geometry.h so backends
// share it.
#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

bool is_float(ir::DType t) { return ir::dtype_is_float(t); }
bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

Status verify_conv(const ir::Node& node) {
  const int64_t group = node.attrs.get_int("group", 1);
  if (group < 1 || group > kMaxWindowAttr) {
    return invalid_model(node.label() + ": attribute 'group' must be in 1.." + std::to_string(kMaxWindowAttr));
  }
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (!parse_auto_pad(auto_pad)) {
    return invalid_model(node.label() + ": attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  }
  return ok_status();
}

// Output 0 of a Conv-like node with data input `x` and weight `w`: exact when both shapes are
// static, otherwise rank, batch, channels and whichever spatial dims are computable.
Status infer_conv_like(ir::InferContext& ctx, int x, int w, ir::DType dtype, bool transpose) {
  const ir::Shape& xs = ctx.shape(x);
  const ir::Shape& ws = ctx.shape(w);
  auto xd = xs.static_dims();
  auto wd = ws.static_dims();
  if (xd && wd) {
    auto g = transpose ? resolve_conv_transpose(ctx.attrs(), *xd, *wd) : resolve_conv(ctx.attrs(), *xd, *wd);
    if (!g.ok()) return ctx.error(g.status().message());
    std::vector<int64_t> dims = {g->batch, g->out_channels};
    dims.insert(dims.end(), g->out.begin(), g->out.end());
    ctx.output(0) = {dtype, ir::Shape::from_dims(dims)};
    return ok_status();
  }
  const int rank = xs.rank_known() ? xs.rank() : ws.rank_known() ? ws.rank() : -1;
  if (rank < 0) {
    ctx.output(0) = {dtype, ir::Shape::unknown_rank()};
    return ok_status();
  }
  if (rank < 3) return ctx.error("input must have rank >= 3 (N, C, spatial...)");
  if (xs.rank_known() && ws.rank_known() && xs.rank() != ws.rank()) {
    return ctx.error("weight rank differs from input rank");
  }
  std::vector<ir::Dim> dims(static_cast<size_t>(rank));
  if (xs.rank_known()) dims[0] = xs[0];
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (ws.rank_known()) {
    if (!transpose) dims[1] = ws[0];
    else if (ws[1].is_static()) dims[1] = ir::Dim(ws[1].value * group);
  }
  std::optional<AxisList> kernel;
  if (ws.rank_known()) {
    AxisList k;
    for (int i = 2; i < rank && ws[i].is_static(); ++i) k.push_back(ws[i].value);
    if (static_cast<int>(k.size()) == rank - 2) kernel = k;
  }
  if (xs.rank_known() && (kernel || ctx.attrs().has("kernel_shape"))) {
    const int spatial = rank - 2;
    std::optional<TransposeWindowAttrs> t;
    std::optional<WindowAttrs> w;
    if (transpose) {
      auto r = read_transpose_window_attrs(ctx.attrs(), spatial, kernel);
      if (!r.ok()) return ctx.error(r.status().message());
      t = std::move(r).value();
    } else {
      auto r = read_window_attrs(ctx.attrs(), spatial, kernel);
      if (!r.ok()) return ctx.error(r.status().message());
      w = std::move(r).value();
    }
    for (int a = 0; a < spatial; ++a) {
      if (!xs[a + 2].is_static()) continue;
      auto ax = t ? transpose_window_axis(*t, a, xs[a + 2].value) : forward_window_axis(*w, a, xs[a + 2].value);
      if (!ax.ok()) return ctx.error(ax.status().message());
      dims[static_cast<size_t>(a + 2)] = ir::Dim(ax->out);
    }
  }
  ctx.output(0) = {dtype, ir::Shape(std::move(dims))};
  return ok_status();
}

Status check_bias(const ir::InferContext& ctx, int b, ir::DType dtype) {
  if (!ctx.has_input(b)) return ok_status();
  if (ctx.dtype(b) != dtype) {
    return ctx.error("bias must be " + std::string(ir::dtype_name(dtype)) + ", got " +
                     std::string(ir::dtype_name(ctx.dtype(b))));
  }
  if (ctx.shape(b).rank_known() && ctx.shape(b).rank() != 1) return ctx.error("bias must be 1-D");
  return ok_status();
}

Status infer_conv(ir::InferContext& ctx) {
  if (!is_float(ctx.dtype(0))) return ctx.error("input must be a float type");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 1));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_bias(ctx, 2, ctx.dtype(0)));
  return infer_conv_like(ctx, 0, 1, ctx.dtype(0), ctx.node.op_type == "ConvTranspose");
}

// A zero point must have its data input's dtype.
Status check_zero_point(const ir::InferContext& ctx, int zp, int data) {
  if (ctx.has_input(zp) && ctx.dtype(zp) != ctx.dtype(data)) {
    return ctx.error("zero point input " + std::to_string(zp) + " must have the dtype of input " +
                     std::to_string(data));
  }
  return ok_status();
}

Status infer_conv_integer(ir::InferContext& ctx) {
  if (!is_q8(ctx.dtype(0)) || !is_q8(ctx.dtype(1))) return ctx.error("inputs must be u8 or i8");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_zero_point(ctx, 2, 0));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_zero_point(ctx, 3, 1));
  return infer_conv_like(ctx, 0, 1, ir::DType::kI32, false);
}

// QLinearConv inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
Status infer_qlinear_conv(ir::InferContext& ctx) {
  if (!is_q8(ctx.dtype(0)) || !is_q8(ctx.dtype(3)) || !is_q8(ctx.dtype(7))) {
    return ctx.error("x, w and y_zero_point must be u8 or i8");
  }
  for (int s : {1, 4, 6}) {
    if (ctx.dtype(s) != ir::DType::kF32) return ctx.error("scale input " + std::to_string(s) + " must be f32");
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(check_zero_point(ctx, 2, 0));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_zero_point(ctx, 5, 3));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_bias(ctx, 8, ir::DType::kI32));
  return infer_conv_like(ctx, 0, 3, ctx.dtype(7), false);
}

// nfuse.DynamicQuantConv: ONNX Runtime's dynamically quantized Conv as one node, minted by
// passes/fuse_dynamic_quant from
//   DynamicQuantizeLinear(x) -> (xq, xs, xzp);  ConvInteger(xq, w, xzp, w_zp) -> acc;
//   Cast(acc, float) -> accf;  Mul(xs, w_scale) -> s;  Mul(accf, s) -> y  [; Add(y, bias)]
// Inputs: x f32 [N, C, spatial...]; w u8 or s8 constant [M, C/group, kernel...]; w_zero_point of
// w's dtype and w_scale f32, 1 or M elements; bias f32, M elements (optional). Conv's attributes.
// Output f32, Conv's shape. The arithmetic is that graph's step for step (ref_conv.cpp).
Status infer_dynamic_quant_conv(ir::InferContext& ctx) {
  if (ctx.dtype(0) != ir::DType::kF32) return ctx.error("x must be float32");
  if (!is_q8(ctx.dtype(1))) return ctx.error("w must be uint8 or int8");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_zero_point(ctx, 2, 1));
  if (ctx.dtype(3) != ir::DType::kF32) return ctx.error("w_scale must be float32");
  if (ctx.has_input(4) && ctx.dtype(4) != ir::DType::kF32) return ctx.error("bias must be float32");
  return infer_conv_like(ctx, 0, 1, ir::DType::kF32, false);
}

}  // namespace

void register_conv_ops(ir::OpRegistry& registry) {
  registry.add(
      ir::OpSchema{.op_type = "Conv", .min_inputs = 2, .max_inputs = 3, .verify = verify_conv, .infer = infer_conv});
  registry.add(ir::OpSchema{
      .op_type = "ConvTranspose", .min_inputs = 2, .max_inputs = 3, .verify = verify_conv, .infer = infer_conv});
  registry.add(ir::OpSchema{
      .op_type = "ConvInteger", .min_inputs = 2, .max_inputs = 4, .verify = verify_conv, .infer = infer_conv_integer});
  registry.add(ir::OpSchema{
      .op_type = "QLinearConv", .min_inputs = 8, .max_inputs = 9, .verify = verify_conv, .infer = infer_qlinear_conv});
  registry.add(ir::OpSchema{.op_type = "DynamicQuantConv",
                            .min_inputs = 4,
                            .max_inputs = 5,
                            .verify = verify_conv,
                            .infer = infer_dynamic_quant_conv,
                            .domain = "nfuse"});
}

}  // namespace nfuse::ops
