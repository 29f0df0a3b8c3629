// Builds a standard QDQ ONNX graph from a float graph, its quantization plan (quant_plan.h) and
// the calibrated parameters, for a chosen selection of layers and precisions: the whole int8
// model, one layer alone (sensitivity), or a mixed-precision candidate.
//
//   activations: x -> QuantizeLinear -> DequantizeLinear -> every former consumer of x
//                (opset 13 ops for u8/s8; int16 tensors use the "com.microsoft" domain ops, as
//                ONNX Runtime's quantizer writes them below opset 21)
//   weights:     DequantizeLinear(s8 constant, per-channel scale on the output axis, zp 0)
//   biases:      left as f32 constants (the fuse_qdq_* passes requantize them)
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"
#include "quant/calib_method.h"
#include "quant/quant_plan.h"
#include "quant/quant_params.h"

namespace nfuse::quant {

// A calibrated activation tensor: its ranges for 8-bit and 16-bit storage.
struct CalibratedTensor {
  Range range8;
  Range range16;
  Method method8 = Method::kMinMax;  // the method that gave range8
  std::string shared_with;  // non-empty: the ranges are this tensor's
  // Where the ranges were cut to what the tensor's lookups tell apart (reader_domain.h), -inf /
  // +inf on an uncut side: the report compares the float tensor clamped to it.
  Range reader_cut{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  // Inputs of weighted layers: the mean of each channel (Conv: axis 1; Gemm / MatMul: the last
  // axis) over the calibration set, for bias correction.
  std::vector<double> channel_mean;
};

// A weighted layer's int8 weight rounded adaptively (adaptive_rounding.h) for these per-channel
// scales; used where the builder arrives at the same scales, nearest rounding elsewhere.
struct RoundedWeight {
  std::vector<float> scale;
  ir::Tensor values;  // s8, the weight's shape
};
using RoundedWeights = std::map<std::string, RoundedWeight>;  // PlannedLayer::node_output ->

// Which layers are quantized, and at what activation precision.
struct QdqSelection {
  ActScheme act = ActScheme::kU8Asymmetric;  // the base activation scheme
  bool only = false;                // true: only the layers in `only_layers` are quantized
  std::set<std::string> only_layers;   // PlannedLayer::node_output
  std::set<std::string> float_layers;  // left in float (weights and their activations)
  std::set<std::string> int16_layers;  // their input and output tensors become s16 (W8A16)
  // Bias correction: a weighted layer's float bias absorbs the expected error its weight
  // rounding adds, (W_q - W) E[x], with E[x] the calibrated per-channel input mean (borders'
  // zero padding ignored). Conv and Gemm (absent or 1-D C); MatMul has no bias to correct.
  bool bias_correction = false;
  // Weights only (`--weight-only`, and the floor every report shows): the same int8 weights,
  // activations left in float, so the output error is what 8-bit weights alone cost.
  bool weights_only = false;
  // --weight-rounding adaptive: the layers whose weights were rounded on the calibration data.
  std::shared_ptr<const RoundedWeights> rounded;
};

struct QdqGraph {
  std::unique_ptr<ir::Graph> graph;
  // For each layer of the plan: the tensor to measure its output on in `graph` (its
  // DequantizeLinear output when quantized, else the float tensor).
  std::map<std::string, std::string> measured;  // PlannedLayer::node_output -> value name
  std::map<std::string, ir::QuantParams> params;  // every quantized tensor's parameters
  std::map<std::string, ActScheme> schemes;       // and scheme
  int weights_quantized = 0;
  int biases_corrected = 0;
  int weights_rounded_adaptively = 0;
};

Result<QdqGraph> build_qdq_graph(const ir::Graph& fp32, const QuantPlan& plan,
                                 const std::map<std::string, CalibratedTensor>& calibrated,
                                 const QdqSelection& selection);

// Copies `g` (through the ONNX exporter and importer; `g` must be standard ONNX).
Result<std::unique_ptr<ir::Graph>> clone_graph(const ir::Graph& g);

}  // namespace nfuse::quant
