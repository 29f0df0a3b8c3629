// Which layers hurt, and automatic mixed precision.
//
// Sensitivity: each quantized layer alone (every other layer left in float) is scored by the
// error of the graph's final output against the float graph, at int8 and (for the integer-first
// search) at int16 activations (W8A16). What the layer's int8 quantization costs alone, and how
// much of that int16 takes back, decide where it is promoted; both are read on the worst sample
// (the target is judged on it), and for --precision mixed the samples scored are the promotion
// samples on which the all-int8 graph is worst.
// Mixed precision (`--precision mixed`): starting from the all-int8 graph, layers are promoted
// until the worst sample's output cosine reaches the target. Each candidate step moves one
// layer one rung up (int8 -> int16 -> float, or int8 -> float where int16 does not take back at
// least half of the layer's loss: the 8-bit weights limit it, and int16 would cost without
// helping) and is ranked by the loss it removes per unit of compute it adds (the layer's MACs
// times the precision's relative cost per MAC); `--promote int16` / `float` allow one rung only.
// A step that removes nothing is not taken. Each evaluation re-runs the whole graph; the steps
// grow (a step adds max(1, taken / 2) more: 1, 1, 1, 1, 2, 3, 4, 7...) so a deep net needs few
// evaluations, and a bisection inside the step that met the target finds the shortest prefix
// that does. The speed cost is measured, not estimated: the int8 and the final graph each run on
// the cpu backend and their median times are reported, with each precision's share of the MACs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nfuse/status.h"
#include "quant/metrics.h"
#include "quant/quantize_graph.h"

namespace nfuse::quant {

struct LayerSensitivity {
  std::string node_output;  // PlannedLayer::node_output
  ErrorSummary output;      // final-output error with only this layer quantized (int8)
  std::optional<ErrorSummary> int16;  // ... with only this layer quantized, at int16 (when measured)
  // The lowest output cosine of one sample, alone at int8 and at int16: what the layer costs the
  // sample the target is judged on (the mean can hide it).
  double worst = 1.0;
  double int16_worst = 1.0;  // set with int16
};

// Scores every layer of `q.plan` on `batches` against `reference` (run_output0 of q.fp32); with
// `with_int16`, also at int16 activations (twice the evaluations).
Result<std::vector<LayerSensitivity>> layer_sensitivity(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                                        const std::vector<ir::Tensor>& reference, int threads,
                                                        bool with_int16 = false);

// The compute of every MAC op of q.fp32 at one sample of `input_dims` (the model's input, its
// batch dim taken as 1 unless the model fixes it): multiply-accumulates of each planned layer
// (for one with no MACs, Add or Sigmoid or a pool, the elements of its quantized inputs and
// output: what promoting it converts, so its promotion still has a cost; a global pool's is its
// input, not its one value per channel), and of the MAC ops no layer covers (which stay float).
struct LayerWork {
  std::map<std::string, int64_t> macs;      // PlannedLayer::node_output -> MACs
  std::map<std::string, int64_t> elements;  // PlannedLayer::node_output -> input + output elements
  int64_t unplanned_macs = 0;               // MAC ops outside the plan: float
};
Result<LayerWork> layer_work(const QuantizeResult& q, const std::vector<int64_t>& input_dims);

// Each precision's share of the MACs in q's current selection (the graph as it runs).
struct MacShares {
  int64_t int8 = 0, int16 = 0, float32 = 0;
  int64_t total() const { return int8 + int16 + float32; }
  // executed_mac_shares: each MAC node's precision as it ran ("int8", "int16", "float"), by the
  // node's name (the fusions keep the name of the op they replace).
  std::map<std::string, std::string> ran;
};
MacShares mac_shares(const QuantizeResult& q, const LayerWork& work);
// The same shares as the cpu backend runs `qdq` at one sample of `input_dims` (batch 1 unless the
// model fixes it), read from the kernels of its compiled plan: QLinearConv / QLinearMatMul /
// ConvInteger / MatMulInteger int8, QLinearConv16 / QLinearMatMul16 int16, every other MAC op
// float. What executed, not what the selection meant: a layer left in float between integer
// neighbours, or a chain the fusions could not take, counts as float.
Result<MacShares> executed_mac_shares(const ir::Graph& qdq, const std::vector<int64_t>& input_dims);

// A layer's precision in q's current selection: "int8", "int16", "float" or, for --weight-only,
// "w8 (float activations)".
std::string layer_precision(const QuantizeResult& q, const PlannedLayer& l);

// kAuto: the integer-first ladder; kInt16 / kFloat: that rung only.
enum class PromoteTo { kAuto, kInt16, kFloat };
Result<PromoteTo> parse_promote_to(std::string_view name);
const char* promote_to_name(PromoteTo p);

struct Promotion {
  std::string node_output;
  std::string name;
  std::string op;
  PromoteTo to = PromoteTo::kInt16;    // the precision it ends at (kInt16 or kFloat)
  double alone_cosine = 1.0;           // output cosine with only this layer quantized
  double alone_int16_cosine = -1.0;    // ... at int16 (-1: not measured)
  int64_t macs = 0;
  double output_cosine_after = 1.0;    // worst-sample output cosine with the promotions up to this one
                                       // (the last evaluated prefix at or before it)
  // Non-empty: promoted to int16 to write the input of that layer (its name) at 16 bits, not
  // for its own error (see promote_until).
  std::string writes_input_of;
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
  int demotions = 0;  // promotions taken one rung back down after the target was met
};

// Relative compute per MAC of each precision, which orders the promotions: int8 products pack 4
// per 32-bit lane (VNNI vpdpbusd, NEON sdot), 16-bit ones 2 (vpdpwssd), f32 one FMA.
inline constexpr double kCostPerMacInt8 = 1.0;
inline constexpr double kCostPerMacInt16 = 2.0;
inline constexpr double kCostPerMacFloat = 4.0;
// int16 is a rung only where it takes back at least this share of the layer's int8 loss.
inline constexpr double kInt16MustRecover = 0.5;
// Once the target is met, at most this many of the costliest promotions (MACs, float counting
// twice) are each tried one rung down: one evaluation each.
inline constexpr size_t kMaxDemotionTrials = 48;

// Promotes layers of `q` (rebuilding q.qdq) until the output cosine of every sample of `batches`
// reaches `target_cosine` or no step is left. A tensor keeps the precision of the layer that
// writes it (its readers at another precision requantize it), so an int16 step promotes the
// 8-bit writers of the layer's inputs with it, and costs their MACs too: the layer then reads
// 16-bit inputs, as its "int16 alone" score measured them (a float writer leaves the tensor to its
// readers' precision already). Once the target is met, the costliest promotions are tried one
// rung down and kept there where every sample still meets it (`demotions`). kAuto and kInt16 need `sensitivity`
// measured with int16; `work` gives the cost of each step.
Result<MixedPrecisionResult> promote_until(QuantizeResult& q, const std::vector<LayerSensitivity>& sensitivity,
                                           const LayerWork& work, const std::vector<ir::Tensor>& batches,
                                           const std::vector<ir::Tensor>& reference, double target_cosine, PromoteTo to,
                                           int threads);

// The first calibration samples, one per batch, at most `max_samples` and `max_elements` input
// elements in all (at least one sample); for a model with a fixed batch of `fixed_batch` > 1
// rows, whole batches of the calibration (which then hold exactly that many), at least one. Sensitivity runs the graph
// once per layer, so it takes few (kSensitivity*); promotion re-evaluates only once per step, and decides when to stop,
// so it takes more (kPromotion*) to generalise. The held-out set never takes part.
inline constexpr int64_t kSensitivitySamples = 8;
// --precision mixed scores the layers on at least this many samples: the promotion samples where
// the all-int8 graph is worst (the detector's 960x960 inputs fit one sample in the budget above).
inline constexpr size_t kSensitivityWorstSamples = 3;
inline constexpr int64_t kSensitivityElements = int64_t{1} << 22;
inline constexpr int64_t kPromotionSamples = 32;
inline constexpr int64_t kPromotionElements = int64_t{1} << 25;
std::vector<ir::Tensor> first_samples(const std::vector<ir::Tensor>& calibration, int64_t max_samples,
                                      int64_t max_elements, int64_t fixed_batch = 0);

// Median wall time (ms) of `g` on the cpu backend (optimized) over `runs` runs after 3 warm-ups.
Result<double> median_ms(const ir::Graph& g, const ir::Tensor& input, int runs, int threads);

}  // namespace nfuse::quant
