// Trilu (keep the upper or lower triangle of the last two dims) and ReverseSequence (reverse
// the first sequence_lens[b] steps of each batch entry). Both keep the input's shape.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status infer_trilu(ir::InferContext& ctx) {
  if (ctx.shape(0).rank_known() && ctx.shape(0).rank() < 2) return ctx.error("input must have rank >= 2");
  if (const ir::Tensor* k = ctx.value(1); k && k->numel() != 1) return ctx.error("k must hold one element");
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

Status verify_reverse_sequence(const ir::Node& node) {
  const int64_t b = node.attrs.get_int("batch_axis", 1);
  const int64_t t = node.attrs.get_int("time_axis", 0);
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t) {
    return invalid_model(node.label() + ": batch_axis and time_axis must be 0 and 1 in some order");
  }
  return ok_status();
}

Status infer_reverse_sequence(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  if (in.rank_known() && in.rank() < 2) return ctx.error("input must have rank >= 2");
  const ir::Shape& lens = ctx.shape(1);
  if (lens.rank_known() && lens.rank() != 1) return ctx.error("sequence_lens must be 1-D");
  const int b = static_cast<int>(ctx.attrs().get_int("batch_axis", 1));
  if (in.rank_known() && lens.rank_known() && in[b].is_static() && lens[0].is_static() &&
      in[b].value != lens[0].value) {
    return ctx.error("sequence_lens must have one entry per batch element");
  }
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

}  // namespace

void register_trilu_reverse_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Trilu", .max_inputs = 2, .infer = infer_trilu});
  registry.add(ir::OpSchema{.op_type = "ReverseSequence",
                            .min_inputs = 2,
                            .max_inputs = 2,
                            .verify = verify_reverse_sequence,
                            .infer = infer_reverse_sequence});
}

}  // namespace nfuse::ops
