// Which nodes of a float graph get quantized and which activation tensors carry Q/DQ pairs: the
// analysis half of `nfuse quantize`, apart from calibration (quantize_graph.h) and from building
// the QDQ graph (qdq_builder.h).
//
// Quantized nodes ("layers" in the report), each of which then runs on an integer kernel when
// the cpu backend's fuse_qdq_* passes recognise its DQ -> op -> Q pattern:
//   weighted   Conv / Gemm / MatMul with a constant float weight (per-channel s8 weight), and
//              ConvTranspose with one group (per output channel: the weight's axis 1), which
//              runs as a pointwise QLinearConv and a DepthToSpace where its taps do not overlap
//              (fuse_qdq_conv_transpose) and in float between its Q/DQ elsewhere
//   elementwise Add / Mul with two activation inputs, Concat of activations
//   pools      GlobalAveragePool, AveragePool, MaxPool
//   lookups    single-input element-wise activations (Sigmoid, Tanh, HardSwish, HardSigmoid,
//              LeakyRelu, Elu, Softplus, and Relu / Clip not absorbed by a layer)
// Every float, non-constant data input of a quantized node and its first output become
// quantized tensors (one Q -> DQ pair per tensor, all consumers read the DQ). Graph outputs stay
// float. With u8 activations a weighted layer whose only consumer is Relu or Clip absorbs it:
// the activation's output is the quantized tensor, and its [0, max] range implies the clamp.
// With s16 (W8A16) a Conv absorbs it too: the symmetric range implies nothing, and the conv
// fusion clamps to the activation's bounds (nfuse.QLinearConv16's y_min / y_max), where a
// separate 16-bit lookup would cost a pass over the tensor.
// With 8-bit activations a Conv whose output only the element-wise region after it reads (a
// HardSwish, the affine after it, equalization's Mul...) absorbs that region when
// nfuse.QLinearConvRegion can run it: its own output gets no Q/DQ, the region's does, and
// fuse_qdq_conv_region runs the pair as that op, the region on the exact accumulator. An 8-bit
// code of a HardSwish input spends most of its 256 steps below -3, where the activation is flat;
// the float epilogue rounds once, after it.
// Value-moving ops (MaxPool, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity, Relu
// when not absorbed) pass a quantized input's parameters on to their output ("shared"), since
// every value they output already lies on the input's grid: the second Q/DQ is then exact and
// int8 MaxPool needs no requantization.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"
#include "quant/quant_params.h"

namespace nfuse::quant {

enum class LayerKind { kWeighted, kElementwise, kPool, kLookup };
const char* layer_kind_name(LayerKind kind);

struct PlannedLayer {
  std::string node_output;  // the node's first output: names the node in any copy of the graph
  std::string name;    // for reports: the node's name, or its output's when unnamed
  std::string op;      // op type
  LayerKind kind = LayerKind::kWeighted;
  int weight_axis = -1;               // kWeighted: the per-channel axis of input 1
  std::vector<std::string> inputs;    // quantized activation inputs
  std::string output;                 // the tensor measured (the absorbed activation's output)
  std::vector<std::string> region;    // kLookup, or a Conv's absorbed region: its nodes' first outputs, in graph order
  bool output_quantized = false;      // false for graph outputs, left in float
  // kWeighted Conv that absorbed the element-wise region after it (8-bit activations): its own
  // output, which stays float (`output` is the region's); quantized only where the layer is
  // promoted to int16 (a 16-bit conv and region, as before the absorption).
  std::string fused_root;
};

struct QuantPlan {
  std::vector<PlannedLayer> layers;          // graph order
  std::vector<std::string> tensors;          // every quantized activation tensor, first-seen order
  std::map<std::string, std::string> shared;  // tensor -> the tensor whose parameters it takes
  // Tensors calibrated only for an int16 promotion: the fused_root of each absorbing Conv (no
  // 8-bit range is chosen or written for them).
  std::set<std::string> int16_only;
  // The tensors to calibrate: `tensors` minus the shared ones.
  std::vector<std::string> observed() const;
};

// Analyses `g` (float, optimized, relinked). Fails when nothing can be quantized. `conv_regions`:
// Convs absorb the region after them (8-bit activations only).
Result<QuantPlan> plan_quantization(const ir::Graph& g, ActScheme act, bool conv_regions = true);

// The node producing `layer.node_output` in `g` (a copy of the planned graph), or nullptr.
ir::Node* find_layer_node(const ir::Graph& g, const PlannedLayer& layer);

}  // namespace nfuse::quant
