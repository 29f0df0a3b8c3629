// The fused epilogue: what fuse_activation, fuse_residual_add and fuse_matmul_bias attach to a
// Conv, ConvTranspose, Gemm or MatMul, and what every backend running such a node must apply
// after the op itself.
//
//   y = op(inputs)                       (bias included, as the op defines it)
//   y = y + B        when nfuse.bias = 1, B = node.implicit_inputs.back(), same dtype as y, with
//                    as many elements as y's last dim, broadcast over the other dims (what
//                    fuse_matmul_bias attaches to a MatMul: ONNX MatMul has no bias input)
//   y = y + R        when nfuse.residual = 1, R = node.implicit_inputs[0], same dtype and shape as y
//   y = act(y)       when nfuse.activation is present, with nfuse.activation_params
//   y = a * y + b    when nfuse.affine = [a, b] is present (what fuse_affine takes from a Mul
//                    and / or Add of scalars after the activation: PP-LCNet's learnable affine
//                    blocks)
//
// Attributes (all optional; absent means "no epilogue"):
//   nfuse.activation         string  Relu | Clip | LeakyRelu | Sigmoid | HardSigmoid | HardSwish | SiLU | Tanh |
//                                    Gelu | GeluTanh
//   nfuse.activation_params  floats  Relu: []            max(y, 0)
//                                    Clip: [lo, hi]      min(max(y, lo), hi)
//                                    LeakyRelu: [alpha]  y >= 0 ? y : alpha * y
//                                    Sigmoid: []         1 / (1 + exp(-y))
//                                    HardSigmoid: [alpha, beta]  clamp(alpha * y + beta, 0, 1)
//                                    HardSwish: [alpha, beta]    y * clamp(alpha * y + beta, 0, 1)
//                                                                (ONNX HardSwish: [1/6, 0.5])
//                                    SiLU: []            y * sigmoid(y)   (x * Sigmoid(x), "Swish")
//                                    Tanh: []            tanh(y)
//                                    Gelu: []            y/2 (1 + erf(y / sqrt 2))  (nfuse.Gelu, Gelu-20)
//                                    GeluTanh: []        y/2 (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3)))
//   nfuse.residual           int     1: the residual is node.implicit_inputs[0]
//   nfuse.bias               int     1: the bias is the last implicit input (implicit_inputs[1]
//                                    when there is a residual too, else implicit_inputs[0])
//   nfuse.affine             floats  [a, b], applied after the activation
//
// The residual travels in implicit_inputs, not inputs, because the Conv/Gemm/MatMul schemas bound
// their input count; topo_sort, relink, compact, the plan's slots and liveness and the ref backend
// already treat implicit inputs as inputs in all but name. A backend that does not implement the
// epilogue must decline every node for which has_fused_epilogue() is true.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::ops {

inline constexpr const char* kFusedActivationAttr = "nfuse.activation";
inline constexpr const char* kFusedActivationParamsAttr = "nfuse.activation_params";
inline constexpr const char* kFusedResidualAttr = "nfuse.residual";
inline constexpr const char* kFusedBiasAttr = "nfuse.bias";
inline constexpr const char* kFusedAffineAttr = "nfuse.affine";

enum class FusedActivation {
  kNone,
  kRelu,
  kClip,
  kLeakyRelu,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kSiLU,
  kTanh,
  kGelu,
  kGeluTanh
};

struct FusedEpilogue {
  FusedActivation activation = FusedActivation::kNone;
  std::vector<float> params;         // as documented above, checked for count
  const ir::Value* residual = nullptr;  // node.implicit_inputs[0] when nfuse.residual = 1
  const ir::Value* bias = nullptr;      // node.implicit_inputs.back() when nfuse.bias = 1
  float scale = 1.0f, shift = 0.0f;     // nfuse.affine
  bool has_affine() const { return scale != 1.0f || shift != 0.0f; }
  bool empty() const {
    return activation == FusedActivation::kNone && residual == nullptr && bias == nullptr && !has_affine();
  }
};

// True when the node carries any nfuse.* epilogue attribute.
bool has_fused_epilogue(const ir::Node& node);
// The activation's attribute spelling ("Relu"...); "" for kNone.
const char* fused_activation_name(FusedActivation act);
// Parses and checks the epilogue attributes; kInvalidModel naming the node when malformed
// (unknown activation, wrong parameter count, residual or bias flag without its implicit input).
Result<FusedEpilogue> read_fused_epilogue(const ir::Node& node);
// Sets the activation attributes on `node` (which must not have one yet).
void set_fused_activation(ir::Node& node, FusedActivation act, std::vector<float> params);

// One activation applied to one value, in double: the definition every backend must match.
double apply_fused_activation(FusedActivation act, const std::vector<float>& params, double y);

}  // namespace nfuse::ops
