// DynamicQuantMatMul, in nfuse's own domain: ONNX Runtime's dynamic quantization of a MatMul
// (what quantize_dynamic writes) as one node, minted by fuse_dynamic_quant from
//   DynamicQuantizeLinear(x) -> (xq, xs, xzp);  MatMulInteger(xq, w, xzp, w_zp) -> acc;
//   Cast(acc, float) -> accf;  Mul(xs, w_scale) -> s;  Mul(accf, s) -> y  [; Add(y, bias)]
// Inputs: x f32 [..., K]; w u8 or s8 constant [K, N]; w_zero_point of w's dtype, 1 or N
// elements; w_scale f32, 1 or N elements; bias f32 [N] (optional). Output f32 [..., N].
// The arithmetic is that graph's, step for step (ref_dynamic_quant_matmul.cpp), so a fused
// model computes what the unfused one does.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status infer_dynamic_quant_matmul(ir::InferContext& ctx) {
  if (ctx.dtype(0) != ir::DType::kF32) return ctx.error("x must be float32");
  const ir::DType wt = ctx.dtype(1);
  if (wt != ir::DType::kU8 && wt != ir::DType::kI8) return ctx.error("w must be uint8 or int8");
  if (ctx.dtype(2) != wt) return ctx.error("w_zero_point must have w's dtype");
  if (ctx.dtype(3) != ir::DType::kF32) return ctx.error("w_scale must be float32");
  const ir::Shape& w = ctx.shape(1);
  if (!w.rank_known() || w.rank() != 2) return ctx.error("w must be a matrix [K, N]");
  if (ctx.has_input(4) && ctx.dtype(4) != ir::DType::kF32) return ctx.error("bias must be float32");
  const ir::Shape& x = ctx.shape(0);
  ir::TensorType& out = ctx.output(0);
  out.dtype = ir::DType::kF32;
  if (!x.rank_known()) {
    out.shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  if (x.rank() < 2) return ctx.error("x must have rank >= 2");
  if (x.dims().back().is_static() && w[0].is_static() && x.dims().back().value != w[0].value) {
    return ctx.error("x's last dim " + std::to_string(x.dims().back().value) + " does not match w's K " +
                     std::to_string(w[0].value));
  }
  std::vector<ir::Dim> dims = x.dims();
  dims.back() = w[1];
  out.shape = ir::Shape(dims);
  return ok_status();
}

}  // namespace

void register_dynamic_quant_matmul_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "DynamicQuantMatMul",
                            .min_inputs = 4,
                            .max_inputs = 5,
                            .infer = infer_dynamic_quant_matmul,
                            .domain = "nfuse"});
}

}  // namespace nfuse::ops
