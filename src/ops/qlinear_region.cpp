// QLinearRegion, in nfuse's own domain: an element-wise region of float ops between a
// DequantizeLinear and a QuantizeLinear, run as one op where no lookup table can stand in for it
// (16-bit activations whose region has constants per channel).
//
//   QLinearRegion(X, x_scale, x_zero_point, y_scale, y_zero_point, C0, C1, ...) -> Y
//     X, Y          8- or 16-bit quantized tensors of one shape (per-tensor parameters);
//                   Y's dtype is y_zero_point's
//     Cj            f32 constants, one element or one per channel (axis 1 of X: [C])
//   attributes      ops (strings): the ONNX op of each step (Add Sub Mul Div Max Min Clip Relu
//                   LeakyRelu HardSigmoid HardSwish Sigmoid Tanh Neg Abs Identity);
//                   operands (ints, two per step): slot s >= 0 (0: X dequantized, 1 + i: step
//                   i's result) or -(j + 1) for constant Cj; unary steps read the first;
//                   params (floats, two per step): Clip's min / max, LeakyRelu's alpha,
//                   HardSigmoid's alpha / beta
//   Y = QuantizeLinear(last step's result, y_scale, y_zero_point), each step computed as the
//   ONNX op (kernels/f32-region/f32_region.h). fuse_qdq_lookup mints it; it is never read from
//   or written to a model file.
#include "ops/qlinear_region.h"

#include <set>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {

const std::vector<std::string>& qlinear_region_ops() {
  static const std::vector<std::string> ops = {"Add",  "Sub",  "Mul",       "Div",         "Max",       "Min",
                                               "Clip", "Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid",
                                               "Tanh", "Neg",  "Abs",       "Identity"};
  return ops;
}

bool qlinear_region_runs(const std::string& op_type) {
  static const std::set<std::string> set(qlinear_region_ops().begin(), qlinear_region_ops().end());
  return set.count(op_type) != 0;
}

namespace {

constexpr uint32_t kQ =
    dtype_bit(ir::DType::kU8) | dtype_bit(ir::DType::kI8) | dtype_bit(ir::DType::kU16) | dtype_bit(ir::DType::kI16);

Status infer_qlinear_region(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kQ));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 4, kQ));
  for (int i : {1, 3}) NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, i, dtype_bit(ir::DType::kF32)));
  if (ctx.dtype(2) != ctx.dtype(0)) return ctx.error("x_zero_point must have X's dtype");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_region_body(ctx, 5, ctx.shape(0)));
  ctx.output(0) = {ctx.dtype(4), ctx.shape(0)};
  return ok_status();
}

}  // namespace

Status check_region_body(ir::InferContext& ctx, int first_constant, const ir::Shape& x) {
  const ir::Attributes& a = ctx.node.attrs;
  const size_t steps = a.get_strings("ops").size();
  for (const auto& op : a.get_strings("ops")) {
    if (!qlinear_region_runs(op)) return ctx.error("op '" + op + "' is not one a region runs");
  }
  if (steps == 0 || a.get_ints("operands").size() != 2 * steps || a.get_floats("params").size() != 2 * steps) {
    return ctx.error("needs ops (at least one), and two operands and two params per op");
  }
  const int constants = ctx.node.num_inputs() - first_constant;
  for (size_t i = 0; i < 2 * steps; ++i) {
    const int64_t v = a.get_ints("operands")[i];
    if (v >= 0 ? v > static_cast<int64_t>(i / 2) : -v - 1 >= constants) {
      return ctx.error("operand " + std::to_string(v) + " of step " + std::to_string(i / 2) +
                       " is neither an earlier slot nor one of the " + std::to_string(constants) + " constants");
    }
  }
  for (int j = 0; j < constants; ++j) {
    NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, first_constant + j, dtype_bit(ir::DType::kF32)));
    const ir::Shape& c = ctx.shape(first_constant + j);
    if (!c.rank_known() || c.rank() != 1 || !c[0].is_static()) return ctx.error("constants must be 1-D");
    const bool per_channel = c[0].value != 1;
    if (per_channel && x.rank_known() && (x.rank() < 2 || (x[1].is_static() && x[1].value != c[0].value))) {
      return ctx.error("constant " + std::to_string(j) + " " + c.to_string() +
                       " must have one element or one per channel of " + x.to_string());
    }
  }
  return ok_status();
}

void register_qlinear_region_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "QLinearRegion", .min_inputs = 5, .max_inputs = 64, .infer = infer_qlinear_region, .domain = "nfuse"});
}

}  // namespace nfuse::ops
