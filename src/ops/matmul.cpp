// MatMul, Gemm and the quantized MatMulInteger and QLinearMatMul: attribute checks and shape
// inference (numpy matmul rules in matmul_geometry.h).
#include "ops/builtin_ops.h"
#include "ops/matmul_geometry.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

bool matmul_dtype_ok(ir::DType t) {
  return ir::dtype_is_float(t) || t == ir::DType::kI32 || t == ir::DType::kI64 || t == ir::DType::kU32 ||
         t == ir::DType::kU64;
}

Status set_matmul_output(ir::InferContext& ctx, int a, int b, ir::DType dtype) {
  auto shape = matmul_shape(ctx.shape(a), ctx.shape(b));
  if (!shape.ok()) return ctx.error(shape.status().message());
  ctx.output(0) = {dtype, std::move(shape).value()};
  return ok_status();
}

Status infer_matmul(ir::InferContext& ctx) {
  if (!matmul_dtype_ok(ctx.dtype(0))) {
    return ctx.error("dtype " + std::string(ir::dtype_name(ctx.dtype(0))) + " is not supported");
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 1));
  return set_matmul_output(ctx, 0, 1, ctx.dtype(0));
}

Status verify_gemm(const ir::Node& node) {
  for (const char* name : {"transA", "transB"}) {
    const int64_t v = node.attrs.get_int(name, 0);
    if (v != 0 && v != 1) return invalid_model(node.label() + ": attribute '" + name + "' must be 0 or 1");
  }
  return ok_status();
}

// Y [M, N] = alpha * A' B' + beta * C, C unidirectionally broadcast to [M, N].
Status infer_gemm(ir::InferContext& ctx) {
  if (!matmul_dtype_ok(ctx.dtype(0))) {
    return ctx.error("dtype " + std::string(ir::dtype_name(ctx.dtype(0))) + " is not supported");
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 2));
  const ir::Shape& as = ctx.shape(0);
  const ir::Shape& bs = ctx.shape(1);
  if ((as.rank_known() && as.rank() != 2) || (bs.rank_known() && bs.rank() != 2)) {
    return ctx.error("A and B must be 2-D");
  }
  const bool ta = ctx.attrs().get_int("transA", 0) == 1;
  const bool tb = ctx.attrs().get_int("transB", 0) == 1;
  ir::Dim m, ka, kb, n;
  if (as.rank_known()) {
    m = as[ta ? 1 : 0];
    ka = as[ta ? 0 : 1];
  }
  if (bs.rank_known()) {
    kb = bs[tb ? 1 : 0];
    n = bs[tb ? 0 : 1];
  }
  if (ka.is_static() && kb.is_static() && ka.value != kb.value) {
    return ctx.error("inner dims differ: " + std::to_string(ka.value) + " vs " + std::to_string(kb.value));
  }
  if (ctx.has_input(2) && ctx.shape(2).rank_known()) {
    const ir::Shape& cs = ctx.shape(2);
    if (cs.rank() > 2) return ctx.error("C must have rank <= 2");
    const ir::Dim* target[2] = {&m, &n};
    for (int i = 0; i < cs.rank(); ++i) {
      const ir::Dim& c = cs[i];
      const ir::Dim& t = *target[2 - cs.rank() + i];
      if (c.is_static() && t.is_static() && c.value != 1 && c.value != t.value) {
        return ctx.error("C of shape " + cs.to_string() + " does not broadcast to [M, N]");
      }
    }
  }
  ctx.output(0) = {ctx.dtype(0), ir::Shape({m, n})};
  return ok_status();
}

Status infer_matmul_integer(ir::InferContext& ctx) {
  if (!is_q8(ctx.dtype(0)) || !is_q8(ctx.dtype(1))) return ctx.error("A and B must be u8 or i8");
  for (int zp = 2; zp <= 3; ++zp) {
    if (ctx.has_input(zp) && ctx.dtype(zp) != ctx.dtype(zp - 2)) {
      return ctx.error("zero point input " + std::to_string(zp) + " must have the dtype of input " +
                       std::to_string(zp - 2));
    }
  }
  return set_matmul_output(ctx, 0, 1, ir::DType::kI32);
}

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
Status infer_qlinear_matmul(ir::InferContext& ctx) {
  if (!is_q8(ctx.dtype(0)) || !is_q8(ctx.dtype(3)) || !is_q8(ctx.dtype(7))) {
    return ctx.error("a, b and y_zero_point must be u8 or i8");
  }
  for (int s : {1, 4, 6}) {
    if (ctx.dtype(s) != ir::DType::kF32) return ctx.error("scale input " + std::to_string(s) + " must be f32");
  }
  if (ctx.dtype(2) != ctx.dtype(0) || ctx.dtype(5) != ctx.dtype(3)) {
    return ctx.error("zero points must have the dtype of their data input");
  }
  return set_matmul_output(ctx, 0, 3, ctx.dtype(7));
}

}  // namespace

void register_matmul_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "MatMul", .min_inputs = 2, .max_inputs = 2, .infer = infer_matmul});
  registry.add(
      ir::OpSchema{.op_type = "Gemm", .min_inputs = 2, .max_inputs = 3, .verify = verify_gemm, .infer = infer_gemm});
  registry.add(
      ir::OpSchema{.op_type = "MatMulInteger", .min_inputs = 2, .max_inputs = 4, .infer = infer_matmul_integer});
  registry.add(
      ir::OpSchema{.op_type = "QLinearMatMul", .min_inputs = 8, .max_inputs = 8, .infer = infer_qlinear_matmul});
}

}  // namespace nfuse::ops
