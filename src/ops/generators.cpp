// Ops that make a tensor from attributes or small scalar inputs: Constant, ConstantOfShape,
// Range, EyeLike and OneHot.
#include <cmath>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status verify_constant(const ir::Node& node) { return constant_value(node).status(); }

Status infer_constant(ir::InferContext& ctx) {
  NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, constant_value(ctx.node));
  ctx.output(0) = {t.dtype(), ir::Shape::from_dims(t.dims())};
  ctx.output_values[0] = std::move(t);
  return ok_status();
}

Status verify_constant_of_shape(const ir::Node& node) {
  if (!node.attrs.has("value")) return ok_status();
  const ir::Tensor* v = node.attrs.get_tensor("value");
  if (!v || v->numel() != 1) return invalid_model(node.label() + ": 'value' must be a one-element tensor");
  return ok_status();
}

Status infer_constant_of_shape(ir::InferContext& ctx) {
  const ir::Tensor* v = ctx.attrs().get_tensor("value");
  ctx.output(0).dtype = v ? v->dtype() : ir::DType::kF32;
  const ir::Tensor* shape = ctx.value(0);
  if (!shape) {
    const ir::Shape& s = ctx.shape(0);
    const bool n_known = s.rank() == 1 && s[0].is_static() && s[0].value <= 64;
    ctx.output(0).shape = n_known ? ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(s[0].value)))
                                  : ir::Shape::unknown_rank();
    return ok_status();
  }
  if (shape->rank() != 1) return ctx.error("shape input must be 1-D");
  std::vector<int64_t> dims = shape->to_int_vector();
  NFUSE_RETURN_IF_ERROR(check_dims(dims), ctx.node.label());
  ctx.output(0).shape = ir::Shape::from_dims(dims);
  return ok_status();
}

// Element count of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
Result<int64_t> range_count(const ir::Tensor& start, const ir::Tensor& limit, const ir::Tensor& delta) {
  if (ir::dtype_is_float(start.dtype())) {
    const double s = start.get_double(0), l = limit.get_double(0), d = delta.get_double(0);
    if (d == 0) return invalid_model("delta must not be 0");
    const double n = std::ceil((l - s) / d);
    if (std::isnan(n) || n > static_cast<double>(kMaxElements)) return invalid_model("Range has too many elements");
    return n > 0 ? static_cast<int64_t>(n) : 0;
  }
  const __int128 s = start.get_int(0), l = limit.get_int(0), d = delta.get_int(0);
  if (d == 0) return invalid_model("delta must not be 0");
  const __int128 span = l - s;
  // Ceiling division with the signs of span and d agreeing; otherwise the range is empty.
  if ((span > 0) != (d > 0) || span == 0) return int64_t{0};
  const __int128 n = d > 0 ? (span + d - 1) / d : (span + d + 1) / d;
  if (n > kMaxElements) return invalid_model("Range has too many elements");
  return static_cast<int64_t>(n);
}

Status infer_range(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 2));
  const ir::DType t = ctx.dtype(0);
  if (t == ir::DType::kBool || t == ir::DType::kF16 || t == ir::DType::kBF16) {
    return ctx.error("Range does not take " + std::string(ir::dtype_name(t)));
  }
  ctx.output(0) = {t, ir::Shape({ir::Dim()})};
  for (int i = 0; i < 3; ++i) {
    if (ctx.shape(i).rank_known() && ctx.shape(i).static_numel() && *ctx.shape(i).static_numel() != 1) {
      return ctx.error("start, limit and delta must be scalars");
    }
  }
  if (!ctx.value(0) || !ctx.value(1) || !ctx.value(2)) return ok_status();
  auto n = range_count(*ctx.value(0), *ctx.value(1), *ctx.value(2));
  if (!n.ok()) return ctx.error(n.status().message());
  ctx.output(0).shape = ir::Shape({ir::Dim(*n)});
  return ok_status();
}

Status verify_eye_like(const ir::Node& node) {
  if (node.attrs.has("dtype") && !dtype_from_onnx(node.attrs.get_int("dtype", 0))) {
    return unsupported(node.label() + ": unsupported dtype code " + std::to_string(node.attrs.get_int("dtype", 0)));
  }
  return ok_status();
}

Status infer_eye_like(ir::InferContext& ctx) {
  ir::DType t = ctx.dtype(0);
  if (ctx.attrs().has("dtype")) t = *dtype_from_onnx(ctx.attrs().get_int("dtype", 0));
  if (ctx.shape(0).rank_known() && ctx.shape(0).rank() != 2) return ctx.error("input must be 2-D");
  ctx.output(0) = {t, ctx.shape(0).rank_known() ? ctx.shape(0) : ir::Shape({ir::Dim(), ir::Dim()})};
  return ok_status();
}

Status infer_one_hot(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(2);
  const ir::Shape& idx = ctx.shape(0);
  if (ctx.shape(2).static_numel() && *ctx.shape(2).static_numel() != 2) return ctx.error("values must hold 2 elements");
  if (!idx.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  const int out_rank = idx.rank() + 1;
  const int64_t axis_attr = ctx.attrs().get_int("axis", -1);
  auto axis = normalize_axis(axis_attr, out_rank);
  if (!axis) return ctx.error(axis_error(axis_attr, out_rank));
  ir::Dim depth;
  if (const ir::Tensor* d = ctx.value(1)) {
    if (d->numel() != 1) return ctx.error("depth must hold one element");
    const double v = d->get_double(0);
    if (!(v >= 0) || v > static_cast<double>(kMaxElements)) return ctx.error("depth out of range");
    depth = ir::Dim(static_cast<int64_t>(v));
  }
  std::vector<ir::Dim> out = idx.dims();
  out.insert(out.begin() + *axis, depth);
  ir::Shape shape(std::move(out));
  NFUSE_RETURN_IF_ERROR(check_shape(shape), ctx.node.label());
  ctx.output(0).shape = std::move(shape);
  return ok_status();
}

}  // namespace

void register_generators_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "Constant", .min_inputs = 0, .max_inputs = 0, .verify = verify_constant, .infer = infer_constant});
  registry.add(
      ir::OpSchema{.op_type = "ConstantOfShape", .verify = verify_constant_of_shape, .infer = infer_constant_of_shape});
  registry.add(ir::OpSchema{.op_type = "Range", .min_inputs = 3, .max_inputs = 3, .infer = infer_range});
  registry.add(ir::OpSchema{.op_type = "EyeLike", .verify = verify_eye_like, .infer = infer_eye_like});
  registry.add(ir::OpSchema{.op_type = "OneHot", .min_inputs = 3, .max_inputs = 3, .infer = infer_one_hot});
}

}  // namespace nfuse::ops
