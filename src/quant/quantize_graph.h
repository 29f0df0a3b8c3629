// Post-training static quantization of a float ONNX graph into the standard QDQ form that
// nfuse's fuse_qdq_* passes turn into integer kernels, with the per-layer accuracy report and
// automatic mixed precision of `nfuse quantize`.
//
// Pipeline (quantize_static):
//   1. the non-fusing optimization passes (constant folding, BN folding...; the graph stays
//      standard ONNX);
//   2. the plan: which nodes and tensors are quantized (quant_plan.h);
//   3. calibration: the float graph runs on the cpu backend with every observed tensor made a
//      graph output, each feeding an Observer (observer.h); the method and activation scheme
//      pick the 8-bit ranges, and 16-bit ranges are kept for promoted layers;
//   4. the QDQ graph for the requested precision (qdq_builder.h): int8 everywhere, s16
//      everywhere (W8A16), or int8 with layers promoted by mixed_precision.h.
// Graph inputs are calibrated with minmax whatever the method (see QuantizeOptions).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/status.h"
#include "quant/calib_method.h"
#include "quant/equalize.h"
#include "quant/metrics.h"
#include "quant/qdq_builder.h"
#include "quant/quant_params.h"
#include "quant/quant_plan.h"

namespace nfuse::quant {

enum class Precision { kInt8, kInt16, kMixed };
Result<Precision> parse_precision(std::string_view name);
const char* precision_name(Precision p);

// How int8 weights are rounded: each to its nearest step, or adaptively on the calibration data
// so that each layer's output error is smallest (adaptive_rounding.h).
enum class WeightRounding { kNearest, kAdaptive };
Result<WeightRounding> parse_weight_rounding(std::string_view name);

// 16-bit activation ranges: everything the calibration saw (minmax, whatever --method says; 8-bit
// ranges clip outliers to keep resolution, 16-bit ones have resolution to spare) widened this
// many times, so held-out data up to 4x beyond the calibrated range is not clipped; 13 of the 15
// magnitude bits stay for the calibrated range, steps 32x finer than u8's over it.
inline constexpr float kRange16Headroom = 4.0f;

struct QuantizeOptions {
  Method method = Method::kMinMax;
  MethodOptions method_options;  // symmetric and bits are set from `act`
  ActScheme act = ActScheme::kU8Asymmetric;
  Precision precision = Precision::kInt8;
  int threads = 1;  // cpu backend threads for calibration and evaluation
  // Calibrate graph inputs with minmax whatever `method` says: an input is preprocessed data
  // whose whole range carries information, often with a large point mass at one end (image
  // background); the threshold searches would clip that mass (entropy folds it into |x|).
  bool minmax_inputs = true;
  bool cle = false;              // cross-layer equalization first (equalize.h)
  bool equalize_activations = false;  // activation equalization first (activation_equalize.h)
  bool bias_correction = false;  // see QdqSelection::bias_correction
  WeightRounding weight_rounding = WeightRounding::kNearest;
  // 8-bit activations: a Conv absorbs the element-wise region after it (quant_plan.h), which then
  // runs on the exact accumulator (nfuse.QLinearConvRegion); false: the Conv's output is
  // quantized and the region is an 8-bit lookup.
  bool conv_regions = true;
};

struct QuantizedTensorInfo {
  std::string name;
  ir::QuantParams params;
  Range range;
  Method method = Method::kMinMax;  // of an 8-bit range (16-bit ranges are minmax with headroom)
  std::string shared_with;  // non-empty when the params come from another tensor
};

struct QuantizeResult {
  std::unique_ptr<ir::Graph> fp32;  // the float graph after the non-fusing passes (BN folded)
  std::unique_ptr<ir::Graph> qdq;   // the QDQ graph, standard ONNX, verified
  QuantPlan plan;
  std::vector<PlannedLayer> layers;  // = plan.layers
  std::map<std::string, CalibratedTensor> calibrated;
  QdqSelection selection;                      // what `qdq` quantizes
  std::map<std::string, std::string> measured;  // layer node_output -> its output tensor in `qdq`
  std::vector<QuantizedTensorInfo> tensors;     // the quantized tensors of `qdq`
  int weights_quantized = 0;
  int biases_corrected = 0;
  int weights_rounded_adaptively = 0;  // of weights_quantized
  int equalized_pairs = 0;             // --cle
  int activation_equalized_pairs = 0;  // --equalize activations
  int activation_equalized_channels = 0;
  int ranges_cut_to_readers = 0;  // tensors whose range stops where their lookups turn constant
  // Replaces qdq/measured/tensors by the graph for `selection`.
  Status rebuild(const QdqSelection& selection);
};

// How many of q's own 8-bit activation ranges (shared and 16-bit ones left out) each method gave:
// what `--method auto` chose.
std::map<std::string, int> range_method_counts(const QuantizeResult& q);

// Runs nfuse's non-fusing optimization passes (constant folding, BN folding...) on `g`: the
// result stays standard ONNX.
Status optimize_without_fusions(ir::Graph& g);

// Quantizes `fp32` (single input) calibrated on `batches` (each a tensor for that input).
// kMixed builds the int8 graph: mixed_precision.h then promotes layers.
Result<QuantizeResult> quantize_static(const ir::Graph& fp32, const std::vector<ir::Tensor>& batches,
                                       const QuantizeOptions& options);

// Per-layer error of the QDQ graph (run on the cpu backend, so on the integer kernels where the
// passes fuse) against the float one over `batches`.
struct LayerError {
  PlannedLayer layer;
  ErrorSummary error;
};
struct QuantizeReport {
  std::vector<LayerError> layers;
  ErrorSummary output;           // graph output 0
  std::string first_below_0_95;  // empty when none
};
Result<QuantizeReport> evaluate_quantization(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                             int threads = 1);

// Graph output 0 of `g` for each batch, on the cpu backend (`optimize`: with its passes, which
// fuse QDQ into integer kernels).
Result<std::vector<ir::Tensor>> run_output0(const ir::Graph& g, const std::vector<ir::Tensor>& batches,
                                            bool optimize, int threads = 1);
// The error of `qdq`'s output 0 against `reference` (run_output0 of the float graph);
// *worst_batch_cosine (optional): the lowest cosine of a single sample (an output row of a batch
// whose output dim 0 is its batch size; the whole batch otherwise), among those whose reference
// holds at least 1% of the largest sample's energy (cosine means nothing on an all-but-zero
// reference); *worst_batch (optional): the index of the batch that holds it; *batch_worst
// (optional): per batch, the lowest such cosine of its samples (1 where none counts).
Result<ErrorSummary> evaluate_output(const ir::Graph& qdq, const std::vector<ir::Tensor>& batches,
                                     const std::vector<ir::Tensor>& reference, int threads = 1,
                                     double* worst_batch_cosine = nullptr, size_t* worst_batch = nullptr,
                                     std::vector<double>* batch_worst = nullptr);

// Helpers shared with mixed_precision / the report.
Result<std::unique_ptr<ir::Graph>> with_outputs(const ir::Graph& g, const std::vector<std::string>& names,
                                                std::map<std::string, size_t>* index);

}  // namespace nfuse::quant
