// The per-layer accuracy report of `nfuse quantize`: JSON for tools, and a self-contained HTML
// page (no scripts, no external files) with an SVG chart of every layer, for people.
//
// For every quantized layer: its precision in the final graph, the error of its output against
// the float graph (the quantized graph's activation vs the float graph's, so errors accumulate
// along the graph) on the calibration set and on the held-out evaluation set, and the final
// output's error with that layer quantized alone (sensitivity); its MACs, each precision's share
// of the MACs, and every layer's error on the worst held-out sample; the first layer whose cosine
// drops below 0.95; the final output's metrics; which layers were promoted and why; and the
// measured speed cost of the promotions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "quant/mixed_precision.h"
#include "quant/quantize_graph.h"

namespace nfuse::quant {

struct ReportInput {
  std::string model;
  QuantizeOptions options;
  const QuantizeResult* result = nullptr;
  int64_t calibration_samples = 0;
  QuantizeReport calibration;
  int64_t evaluation_samples = 0;           // 0: no held-out set
  std::optional<QuantizeReport> evaluation;
  std::vector<LayerSensitivity> sensitivity;  // empty when not measured
  // The samples the sensitivity ("alone") was measured on: calibration samples, never the
  // held-out set (which takes no part in any decision), so every report names them.
  int64_t sensitivity_samples = 0;
  std::string sensitivity_set;  // e.g. "the first 1 calibration sample"
  std::optional<MixedPrecisionResult> mixed;
  // The error floor 8-bit weights set: the graph with only its weights quantized (the same int8
  // weights), on the held-out set when there is one.
  std::optional<ErrorSummary> weight_only_floor;
  double weight_only_worst = 1.0;  // its worst sample's cosine
  double output_worst = 1.0;       // the quantized graph's worst sample on the same set
  // Every layer's error on the batch holding that worst sample (one sample unless the model
  // fixes a larger batch), and the batch's file index.
  std::optional<QuantizeReport> worst_sample;
  size_t worst_sample_index = 0;
  std::optional<LayerWork> work;  // MACs per layer
  std::optional<MacShares> macs;  // the MAC shares per precision, as the final graph runs (executed_mac_shares)
  double int8_ms = 0.0;   // measured only with mixed precision (0: not measured)
  double final_ms = 0.0;
};

std::string report_json(const ReportInput& in);
std::string report_html(const ReportInput& in);

}  // namespace nfuse::quant
