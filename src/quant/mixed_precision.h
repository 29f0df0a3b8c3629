// Which layers hurt, and automatic mixed precision.
//
// Sensitivity: each quantized layer alone (every other layer left in float) is scored by the
// error of the graph's final output against the float graph; a layer whose own quantization
// costs the most output cosine is the most sensitive. This is what the report's "alone" column
// shows, and the promotion order.
// Mixed precision (`--precision mixed`): starting from the all-int8 graph, the most sensitive
// layers are promoted greedily (to W8A16: their activations become s16; or to float) until the
// final output's cosine reaches the target. Each step re-evaluates the whole graph, so a
// promotion is kept only in the order sensitivity gave, and the steps grow (a step promotes
// max(1, promoted / 2) more layers: 1, 1, 1, 1, 2, 3, 4, 7...) so a deep net needs few
// evaluations. The speed cost is measured, not estimated: the
// int8 and the final graph each run on the cpu backend and their median times are reported.
#pragma once

#include <string>
#include <vector>

#include "nfuse/status.h"
#include "quant/metrics.h"
#include "quant/quantize_graph.h"

namespace nfuse::quant {

struct LayerSensitivity {
  std::string node_output;  // PlannedLayer::node_output
  ErrorSummary output;      // final-output error with only this layer quantized
};

// Scores every layer of `q.plan` on `batches` against `reference` (run_output0 of q.fp32).
Result<std::vector<LayerSensitivity>> layer_sensitivity(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                                        const std::vector<ir::Tensor>& reference, int threads);

enum class PromoteTo { kInt16, kFloat };
Result<PromoteTo> parse_promote_to(std::string_view name);
const char* promote_to_name(PromoteTo p);

struct Promotion {
  std::string node_output;
  std::string name;
  std::string op;
  PromoteTo to = PromoteTo::kInt16;
  double alone_cosine = 1.0;           // output cosine with only this layer quantized
  double output_cosine_after = 1.0;    // whole-graph output cosine once this step was applied
};

struct MixedPrecisionResult {
  double target_cosine = 0.99;
  ErrorSummary before;  // all int8
  ErrorSummary after;   // with the promotions
  bool target_met = false;
  std::vector<Promotion> promotions;
  int evaluations = 0;
};

// Promotes layers of `q` (rebuilding q.qdq) until the output cosine on `batches` reaches
// `target_cosine` or every layer is promoted.
Result<MixedPrecisionResult> promote_until(QuantizeResult& q, const std::vector<LayerSensitivity>& sensitivity,
                                           const std::vector<ir::Tensor>& batches,
                                           const std::vector<ir::Tensor>& reference, double target_cosine,
                                           PromoteTo to, int threads);

// Median wall time (ms) of `g` on the cpu backend (optimized) over `runs` runs after 3 warm-ups.
Result<double> median_ms(const ir::Graph& g, const ir::Tensor& input, int runs, int threads);

}  // namespace nfuse::quant
