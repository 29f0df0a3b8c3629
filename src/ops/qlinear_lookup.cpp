// QLinearLookup, in nfuse's own domain "nfuse": an element-wise function of an 8- or 16-bit
// quantized tensor as a table of every input code.
//
//   QLinearLookup(X, table) -> Y        Y[i] = table[index(X[i])]
//     X      u8 or s8, or u16 or s16, any shape
//     table  8-bit X: 1-D, 256 elements, u8 or s8 (Y's dtype); in practice a constant; or
//            [C, 256]: one table per channel (axis 1 of X, of size C; X of rank >= 2), for a
//            chain whose constants differ per channel (activation equalization scales each
//            channel). 16-bit X: 1-D, 65536 elements, u16 or s16.
//     index  X[i] for unsigned X; X[i] + 128 for s8 (-128 -> 0, 0 -> 128, 127 -> 255),
//            X[i] + 32768 for s16
//     Y      X's shape, table's dtype
//
// fuse_qdq_lookup mints it from DequantizeLinear -> element-wise float ops -> QuantizeLinear,
// filling the table by running that chain on the 256 dequantized values, so it equals the QDQ
// graph bit for bit; fuse_qlinear_contrib_lookup mints it from ONNX Runtime's QLinearSigmoid /
// QLinearLeakyRelu. Kept out of the default domain so a model file can never name it by accident.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

constexpr uint32_t kQ8 = dtype_bit(ir::DType::kU8) | dtype_bit(ir::DType::kI8);
constexpr uint32_t kQ16 = dtype_bit(ir::DType::kU16) | dtype_bit(ir::DType::kI16);

Status infer_qlinear_lookup(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kQ8 | kQ16));
  const bool wide = (dtype_bit(ctx.dtype(0)) & kQ16) != 0;
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, wide ? kQ16 : kQ8));
  const ir::Shape& t = ctx.shape(1);
  if (wide && t.rank_known()) {
    if (t.rank() != 1 || (t[0].is_static() && t[0].value != 65536))
      return ctx.error("a 16-bit X needs a [65536] table, got " + t.to_string());
  } else if (t.rank_known()) {
    const bool ok = (t.rank() == 1 || t.rank() == 2) && (!t[t.rank() - 1].is_static() || t[t.rank() - 1].value == 256);
    if (!ok) return ctx.error("table must be [256] or [C, 256], got " + t.to_string());
    const ir::Shape& x = ctx.shape(0);
    if (t.rank() == 2 && x.rank_known() &&
        (x.rank() < 2 || (x[1].is_static() && t[0].is_static() && x[1].value != t[0].value)))
      return ctx.error("a [C, 256] table needs X of rank >= 2 with C channels on axis 1; X is " + x.to_string() +
                       ", table " + t.to_string());
  }
  ctx.output(0) = {ctx.dtype(1), ctx.shape(0)};
  return ok_status();
}

}  // namespace

void register_qlinear_lookup_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "QLinearLookup", .min_inputs = 2, .max_inputs = 2, .infer = infer_qlinear_lookup, .domain = "nfuse"});
}

}  // namespace nfuse::ops
