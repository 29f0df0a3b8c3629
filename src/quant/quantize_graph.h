// Post-training static INT8 quantization of a float ONNX graph into the standard QDQ form
// (opset 13) that nfuse's fuse_qdq_conv / fuse_qdq_matmul passes turn into integer kernels:
//
//   activations: x -> QuantizeLinear(scalar scale, explicit zp) -> DequantizeLinear -> consumers
//   weights:     DequantizeLinear(s8 constant, per-channel scale along the output axis, zp 0)
//   biases:      left as f32 constants (the fusion passes requantize them)
//
// Which tensors: the activation input of every Conv / Gemm / MatMul with a constant weight and
// its output (with u8 activations, the output of a following Relu when the layer's only
// consumer is one, so the Relu fuses into the integer op; with s8 the Relu stays apart, as a
// symmetric range cannot imply it). An input reached from a quantized output only through
// MaxPool / Flatten / Reshape / Relu shares that output's parameters (their outputs stay on the
// input's grid, so the second Q/DQ is exact). Graph outputs stay float (nothing downstream needs
// them in int8): a final Gemm / MatMul producing one therefore runs in float on dequantized
// operands.
//
// Calibration runs the float graph on the cpu backend with every observed tensor made a graph
// output, feeding each into an Observer (observer.h); the method and activation scheme pick the
// ranges (calib_method.h, quant_params.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/status.h"
#include "quant/calib_method.h"
#include "quant/metrics.h"
#include "quant/quant_params.h"

namespace nfuse::quant {

struct QuantizeOptions {
  Method method = Method::kMinMax;
  MethodOptions method_options;  // symmetric and bits are set from `act`
  ActScheme act = ActScheme::kU8Asymmetric;
  int threads = 1;  // cpu backend threads for calibration and evaluation
  // Calibrate graph inputs with minmax whatever `method` says: an input is preprocessed data
  // whose whole range carries information, often with a large point mass at one end (image
  // background); the threshold searches would clip that mass (entropy folds it into |x|).
  bool minmax_inputs = true;
};

// One quantized layer (Conv / Gemm / MatMul) and the tensor its error is measured on.
struct QuantizedLayer {
  std::string name;    // the node's name (its output's name when unnamed)
  std::string op;      // Conv, Gemm, MatMul
  std::string output;  // the float tensor measured: the layer's (or its fused Relu's) output
  bool output_quantized = false;  // false for graph outputs, left in float
  std::string qdq_output;         // the same tensor in the QDQ graph (its DequantizeLinear output)
};

struct QuantizedTensorInfo {
  std::string name;
  ir::QuantParams params;
  Range range;
  std::string shared_with;  // non-empty when the params come from another tensor
};

struct QuantizeResult {
  std::unique_ptr<ir::Graph> fp32;  // the float graph after the non-fusing passes (BN folded)
  std::unique_ptr<ir::Graph> qdq;   // the QDQ graph, standard ONNX, verified
  std::vector<QuantizedLayer> layers;
  std::vector<QuantizedTensorInfo> tensors;
  int weights_quantized = 0;
};

// Copies `g` (through the ONNX exporter and importer; `g` must be standard ONNX).
Result<std::unique_ptr<ir::Graph>> clone_graph(const ir::Graph& g);

// Runs nfuse's non-fusing optimization passes (constant folding, BN folding...) on `g`: the
// result stays standard ONNX.
Status optimize_without_fusions(ir::Graph& g);

// Quantizes `fp32` (single input) calibrated on `batches` (each a tensor for that input).
Result<QuantizeResult> quantize_static(const ir::Graph& fp32, const std::vector<ir::Tensor>& batches,
                                       const QuantizeOptions& options);

// Per-layer error of the QDQ graph (run on the cpu backend, so on the integer kernels where the
// passes fuse) against the float one over `batches`.
struct LayerError {
  QuantizedLayer layer;
  ErrorSummary error;
};
struct QuantizeReport {
  std::vector<LayerError> layers;
  ErrorSummary output;                 // graph output 0
  std::string first_below_0_95;        // empty when none
};
Result<QuantizeReport> evaluate_quantization(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                             int threads = 1);

// The report as JSON text: {"method","act","layers":[...],"first_below_0_95","output"}.
std::string report_json(const QuantizeReport& report, const QuantizeOptions& options);

}  // namespace nfuse::quant
