// Broadcasting arithmetic: Add, Sub, Mul, Div, Pow, Mod, BitShift and the variadic
// Min, Max, Sum, Mean. Numpy broadcasting from opset 7; before it, B broadcasts onto A only
// with the `broadcast` attribute (legacy_broadcast_dims).
#include <limits>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

template <uint32_t kAllowed>
Status infer_binary(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllowed));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 1));
  return infer_binary_broadcast(ctx);
}

// Base and exponent may differ in dtype; the output has the base's.
Status infer_pow(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kNumericDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kNumericDTypes));
  return infer_binary_broadcast(ctx);
}

template <uint32_t kAllowed>
Status infer_variadic(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllowed));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, ctx.num_inputs() - 1));
  return infer_broadcast(ctx);
}

Status verify_mod(const ir::Node& node) {
  const int64_t fmod = node.attrs.get_int("fmod", 0);
  if (fmod != 0 && fmod != 1) return invalid_model(node.label() + ": fmod must be 0 or 1");
  return ok_status();
}

Status verify_bitshift(const ir::Node& node) {
  const std::string dir = node.attrs.get_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") {
    return invalid_model(node.label() + ": direction must be LEFT or RIGHT, got '" + dir + "'");
  }
  return ok_status();
}

ir::OpSchema binary_schema(const char* op, ir::InferFn infer, ir::VerifyFn verify = nullptr) {
  return ir::OpSchema{.op_type = op, .min_inputs = 2, .max_inputs = 2, .verify = verify, .infer = infer};
}

}  // namespace

void register_binary_ops(ir::OpRegistry& registry) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) registry.add(binary_schema(op, infer_binary<kNumericDTypes>));
  registry.add(binary_schema("Pow", infer_pow));
  registry.add(binary_schema("Mod", infer_binary<kNumericDTypes>, verify_mod));
  registry.add(binary_schema("BitShift", infer_binary<kUnsignedDTypes>, verify_bitshift));
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) {
    registry.add(ir::OpSchema{.op_type = op,
                              .min_inputs = 1,
                              .max_inputs = std::numeric_limits<int>::max(),
                              .infer = infer_variadic<kNumericDTypes>});
  }
}

}  // namespace nfuse::ops
