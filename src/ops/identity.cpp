// Identity and Dropout (inference: a copy; Dropout's optional mask output is all true).
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

// training_mode = true with a ratio above 0 makes Dropout random; nfuse is an inference runtime
// and refuses it rather than silently returning the input. (Ratio 0 is the identity.)
Status infer_dropout(ir::InferContext& ctx) {
  const ir::Tensor* training = ctx.value(2);
  const ir::Tensor* ratio = ctx.value(1);
  const double p = ratio && ratio->numel() == 1 ? ratio->get_double(0) : 0.5;
  if (training && training->numel() == 1 && training->get_double(0) != 0 && p != 0.0) {
    return unsupported(ctx.node.label() + ": training_mode=true (random dropout) is not supported for inference");
  }
  ctx.output(0) = ctx.input(0);
  if (ctx.num_outputs() > 1) ctx.output(1) = {ir::DType::kBool, ctx.shape(0)};
  return ok_status();
}

}  // namespace

void register_identity_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Identity", .infer = infer_same_as_input0});
  registry.add(ir::OpSchema{.op_type = "Dropout", .max_inputs = 3, .max_outputs = 2, .infer = infer_dropout});
}

}  // namespace nfuse::ops
