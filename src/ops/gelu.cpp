// Gelu, in nfuse's own domain "nfuse": the ONNX opset-20 Gelu (attribute `approximate`, "none" or
// "tanh"), which the ONNX importer (opsets <= 17) never produces. recognize_gelu mints it from the
// Erf (or tanh) expansion that exporters emit; keeping it out of the default domain means a model
// file can never name it by accident.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_gelu(const ir::Node& node) {
  const std::string approximate = node.attrs.get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return invalid_model(node.label() + ": attribute 'approximate' must be \"none\" or \"tanh\", got '" +
                         approximate + "'");
  }
  return ok_status();
}

Status infer_gelu(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  return infer_same_as_input0(ctx);
}

}  // namespace

void register_gelu_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Gelu", .verify = verify_gelu, .infer = infer_gelu, .domain = "nfuse"});
}

}  // namespace nfuse::ops
