// Element-wise regions of a quantized graph: the float ops between a region's input (a
// DequantizeLinear, or the float output of a Conv whose quantization it absorbs) and the
// QuantizeLinear after them, and the step program nfuse.QLinearRegion and
// nfuse.QLinearConvRegion run them as. Shared by fuse_qdq_lookup and fuse_qdq_conv.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nfuse::passes {

struct ElementwiseRegion {
  ir::Node* root = nullptr;      // the node whose output the region reads (is_root accepted it)
  std::vector<ir::Node*> nodes;  // in graph (topological) order
  int64_t channels = 1;          // > 1: per-channel constants
  int x_rank = -1;
};

// The nodes between q's input and one node that `is_root` accepts, walking producers backwards
// through element-wise float ops (at most 16) whose other inputs are one-element or per-channel
// constants. Every value inside feeds only the region (q for its result) and is no graph output.
// nullopt when the walk meets anything else or two roots. The region may be empty (the root
// feeds q directly).
std::optional<ElementwiseRegion> find_elementwise_region(ir::Graph& graph, ir::Node& q,
                                                         const std::function<bool(const ir::Node&)>& is_root);

// The ops the region's nodes compute, binary ones included (the lookup tables' walk accepts them
// all; the step programs run a subset: ops::qlinear_region_runs).
bool is_region_binary_op(const std::string& op_type);

// A region as nfuse.QLinearRegion's attributes and constants: slot 0 is `input` (the root's
// output), slot 1 + i node i's result; constants as [1] or [channels] tensors, operand -(j + 1).
// An empty region is one Identity step.
struct RegionSteps {
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  std::vector<float> params;
  std::vector<ir::Tensor> constants;
};
// False for an op the program does not run, a constant it cannot take, or more than 63 steps /
// 59 constants. `f32_activations`: HardSwish and HardSigmoid as their f32 formulas (x * Clip(x +
// 3, 0, 6) / 6, and Clip(x * alpha + beta, 0, 1)), which the kernels fuse into one or two passes,
// rather than as the ONNX ops, which they compute in double (a division per element): for
// nfuse.QLinearConvRegion, whose result is one rounding of the float conv output anyway.
bool region_steps(const ElementwiseRegion& r, const ir::Value* input, RegionSteps* out, bool f32_activations = false);

// Makes `node` an nfuse-domain op running `steps` (attributes ops / operands / params; the graph
// imports the nfuse domain). The constants are the caller's inputs to add.
void set_region_steps(ir::Graph& graph, ir::Node& node, const RegionSteps& steps);

}  // namespace nfuse::passes
