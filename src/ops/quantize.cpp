// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: dtype rules and shape inference.
// The arithmetic nfuse defines for them is written down in kernels/quant_arithmetic.h.
//
// ONNX allows 16-bit Q/DQ only from opset 21, so ONNX Runtime's quantizer writes 16-bit QDQ
// models at lower opsets with "com.microsoft" QuantizeLinear / DequantizeLinear: the same inputs,
// attributes (axis) and arithmetic, storage u8/i8/u16/i16. nfuse registers both domains with one
// definition (the ref kernel registry keys kernels by op type, so both run the same kernel) and
// the exporter writes 16-bit ones in "com.microsoft" when the model's opset is below 21.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

bool quantized_storage(ir::DType t) {
  return t == ir::DType::kU8 || t == ir::DType::kI8 || t == ir::DType::kU16 || t == ir::DType::kI16;
}

// Scale (input 1) is a scalar, or 1-D for per-axis quantization along `axis` of input 0; the zero
// point (input 2, optional) has the scale's shape.
Status check_scale_and_zero_point(const ir::InferContext& ctx) {
  if (!ir::dtype_is_float(ctx.dtype(1))) return ctx.error("scale must be a float type");
  const ir::Shape& ss = ctx.shape(1);
  if (ss.rank_known() && ss.rank() > 1) return ctx.error("scale must be a scalar or 1-D");
  if (ctx.has_input(2) && ctx.shape(2).rank_known() && ss.rank_known() &&
      ctx.shape(2).rank() != ss.rank()) {
    return ctx.error("zero point and scale must have the same shape");
  }
  const ir::Shape& xs = ctx.shape(0);
  if (ss.rank_known() && ss.rank() == 1 && ss[0].is_static() && ss[0].value != 1 && xs.rank_known()) {
    auto axis = normalize_axis(ctx.attrs().get_int("axis", 1), xs.rank());
    if (!axis) return ctx.error("attribute 'axis' is out of range");
    const ir::Dim& d = xs[*axis];
    if (d.is_static() && d.value != ss[0].value) {
      return ctx.error("scale has " + std::to_string(ss[0].value) + " elements but axis " +
                       std::to_string(*axis) + " has " + std::to_string(d.value));
    }
  }
  return ok_status();
}

Status infer_quantize(ir::InferContext& ctx) {
  const ir::DType x = ctx.dtype(0);
  if (!ir::dtype_is_float(x) && x != ir::DType::kI32) return ctx.error("x must be a float type or i32");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_scale_and_zero_point(ctx));
  const ir::DType out = ctx.has_input(2) ? ctx.dtype(2) : ir::DType::kU8;
  if (!quantized_storage(out)) {
    return ctx.error("zero point dtype " + std::string(ir::dtype_name(out)) + " is not supported");
  }
  ctx.output(0) = {out, ctx.shape(0)};
  return ok_status();
}

Status infer_dequantize(ir::InferContext& ctx) {
  const ir::DType x = ctx.dtype(0);
  if (!quantized_storage(x) && x != ir::DType::kI32) {
    return ctx.error("x dtype " + std::string(ir::dtype_name(x)) + " is not supported");
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(check_scale_and_zero_point(ctx));
  if (ctx.has_input(2) && ctx.dtype(2) != x) return ctx.error("zero point must have x's dtype");
  ctx.output(0) = {ctx.dtype(1), ctx.shape(0)};
  return ok_status();
}

Status infer_dynamic_quantize(ir::InferContext& ctx) {
  if (ctx.dtype(0) != ir::DType::kF32) return ctx.error("x must be f32");
  ctx.output(0) = {ir::DType::kU8, ctx.shape(0)};
  if (ctx.num_outputs() > 1) ctx.output(1) = {ir::DType::kF32, ir::Shape(std::vector<ir::Dim>{})};
  if (ctx.num_outputs() > 2) ctx.output(2) = {ir::DType::kU8, ir::Shape(std::vector<ir::Dim>{})};
  return ok_status();
}

}  // namespace

void register_quantize_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "QuantizeLinear", .min_inputs = 2, .max_inputs = 3, .infer = infer_quantize});
  registry.add(
      ir::OpSchema{.op_type = "DequantizeLinear", .min_inputs = 2, .max_inputs = 3, .infer = infer_dequantize});
  registry.add(ir::OpSchema{.op_type = "QuantizeLinear",
                            .min_inputs = 2,
                            .max_inputs = 3,
                            .infer = infer_quantize,
                            .domain = "com.microsoft"});
  registry.add(ir::OpSchema{.op_type = "DequantizeLinear",
                            .min_inputs = 2,
                            .max_inputs = 3,
                            .infer = infer_dequantize,
                            .domain = "com.microsoft"});
  registry.add(ir::OpSchema{
      .op_type = "DynamicQuantizeLinear", .min_outputs = 3, .max_outputs = 3, .infer = infer_dynamic_quantize});
}

}  // namespace nfuse::ops
