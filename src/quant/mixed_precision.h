// Which layers hurt, and automatic mixed precision.
//
// Sensitivity: each quantized layer alone (every other layer left in float) is scored by the
// error of the graph's final output against the float graph; a layer whose own quantization
// costs the most output cosine is the most sensitive. This is what the report's "alone" column
// shows, and the promotion order.
// Mixed precision (`--precision mixed`): starting from the all-int8 graph, the most sensitive
// layers are promoted greedily (to W8A16: their activations become s16; or to float) until the
// final output's cosine reaches the target. Each step re-evaluates the whole graph, so a
// promotion follows the order sensitivity gave; the steps grow (a step promotes max(1,
// promoted / 2) more layers: 1, 1, 1, 1, 2, 3, 4, 7...) so a deep net needs few evaluations,
// and a bisection inside the step that met the target finds the shortest prefix that does. The speed cost is measured, not estimated: the
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
  double output_cosine_after = 1.0;    // worst-sample output cosine with the promotions up to this one
                                       // (the last evaluated prefix at or before it)
};

struct MixedPrecisionResult {
  double target_cosine = 0.99;
  ErrorSummary before;  // all int8
  ErrorSummary after;   // with the promotions
  // The lowest cosine of one batch (one sample for fixed-batch-1 models), before and after: the
  // target applies to it, so no single input is left far below while the average meets it.
  double worst_before = 1.0;
  double worst_after = 1.0;
  bool target_met = false;
  std::vector<Promotion> promotions;
  int evaluations = 0;
};

// Promotes layers of `q` (rebuilding q.qdq) until the output cosine of every batch of `batches`
// reaches `target_cosine` or every layer is promoted.
Result<MixedPrecisionResult> promote_until(QuantizeResult& q, const std::vector<LayerSensitivity>& sensitivity,
                                           const std::vector<ir::Tensor>& batches,
                                           const std::vector<ir::Tensor>& reference, double target_cosine,
                                           PromoteTo to, int threads);

// The first calibration samples, one per batch, at most `max_samples` and `max_elements` input
// elements in all (at least one sample); for a model with a fixed batch of `fixed_batch` > 1
// rows, whole batches of the calibration (which then hold exactly that many), at least one. Sensitivity runs the graph
// once per layer, so it takes few (kSensitivity*); promotion re-evaluates only once per step, and decides when to stop,
// so it takes more (kPromotion*) to generalise. The held-out set never takes part.
inline constexpr int64_t kSensitivitySamples = 8;
inline constexpr int64_t kSensitivityElements = int64_t{1} << 22;
inline constexpr int64_t kPromotionSamples = 32;
inline constexpr int64_t kPromotionElements = int64_t{1} << 25;
std::vector<ir::Tensor> first_samples(const std::vector<ir::Tensor>& calibration, int64_t max_samples,
                                      int64_t max_elements, int64_t fixed_batch = 0);

// Median wall time (ms) of `g` on the cpu backend (optimized) over `runs` runs after 3 warm-ups.
Result<double> median_ms(const ir::Graph& g, const ir::Tensor& input, int runs, int threads);

}  // namespace nfuse::quant
