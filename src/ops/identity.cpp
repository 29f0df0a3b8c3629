// Identity and Dropout (inference: a copy; Dropout's optional mask output is all true).
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status infer_dropout(ir::InferContext& ctx) {
  ctx.output(0) = ctx.input(0);
  if (ctx.num_outputs() > 1) ctx.output(1) = {ir::DType::kBool, ctx.shape(0)};
  return ok_status();
}

}  // namespace

NFUSE_REGISTER_OP(ir::OpSchema{.op_type = "Identity", .infer = infer_same_as_input0});
NFUSE_REGISTER_OP(ir::OpSchema{
    .op_type = "Dropout", .max_inputs = 3, .max_outputs = 2, .infer = infer_dropout});

}  // namespace nfuse::ops
