// Helpers shared by op schemas: common inference rules and attribute checks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace nfuse::ops {

// Output 0 = input 0 (dtype and shape).
Status infer_same_as_input0(ir::InferContext& ctx);
// Numpy-style multidirectional broadcasting of the given shapes; kInvalidModel when incompatible.
Result<ir::Shape> broadcast_shapes(const std::vector<const ir::Shape*>& shapes);
// Output 0: dtype of input 0, broadcast shape of all present inputs.
Status infer_broadcast(ir::InferContext& ctx);
// Output 0: bool, broadcast shape of all inputs (comparisons).
Status infer_broadcast_bool(ir::InferContext& ctx);
// Maps axis in [-rank, rank) to [0, rank); nullopt when out of range.
std::optional<int> normalize_axis(int64_t axis, int rank);
// ONNX TensorProto.DataType code (the encoding of Cast's `to`, EyeLike's `dtype`, ...) -> IR
// dtype; nullopt for codes the IR has no type for (string, complex, float8).
std::optional<ir::DType> dtype_from_onnx(int64_t onnx_type);
// Checks every present input has the same dtype as input 0.
Status check_same_dtype(const ir::InferContext& ctx, int first, int last);
// The output shape of a Conv of inputs x and w (by the Conv schema's own inference, given f32
// stand-ins with their shapes: it checks float types), for the quantized convolutions that take
// Conv's attributes (nfuse.QLinearConv16, nfuse.QLinearConvRegion).
Result<ir::Shape> conv_output_shape(const ir::InferContext& ctx, int x, int w);
// Conv's attribute checks (group, auto_pad) on a quantized convolution taking its attributes.
Status verify_as_conv(const ir::Node& node);
// Reshape, Flatten, Squeeze, Unsqueeze (default domain): the output holds the input's elements in
// the same order, so it may share the input's memory.
inline bool reorders_no_elements(const ir::Node& node) {
  const std::string& op = node.op_type;
  return node.domain.empty() && (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze");
}

}  // namespace nfuse::ops
