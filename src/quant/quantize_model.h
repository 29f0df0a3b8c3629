// The whole post-training quantization workflow of `nfuse quantize` and nfuse_quantize(): load the
// float model and the calibration (and optional held-out) data, calibrate and quantize
// (quantize_graph.h), measure every layer's sensitivity, promote layers for --precision mixed,
// write the QDQ model, evaluate it against the float model on both sets, write the JSON / HTML
// reports, and say what it did. Weight-only int4 (MatMulNBits) takes its own, shorter path.
// Every error names the step that failed (loading, calibration, sensitivity, mixed precision,
// export, evaluation, report).
#pragma once

#include <cstdint>
#include <string>

#include "nfuse/status.h"

namespace nfuse::quant {

// The options of `nfuse quantize`, by their flag names (strings are parsed and checked here).
struct QuantizeModelOptions {
  std::string model;   // float32 ONNX model
  std::string calib;   // --calib: folder of .npy inputs or PNG/JPEG images
  std::string output;  // -o: QDQ ONNX model
  std::string report;  // --report: JSON (empty: not written)
  std::string html;    // --html: self-contained page (empty: not written)
  std::string eval;    // --eval: held-out folder (empty: none)
  std::string method = "auto";
  std::string act = "u8";
  double percentile = 99.99;
  int64_t calib_limit = 0;  // 0: every file
  int threads = 1;
  std::string precision = "int8";  // int8 | int16 | mixed
  double target_cosine = 0.99;
  std::string promote = "auto";  // auto (int16 where it helps, else float) | int16 | float
  std::string weights = "int8";  // int8 | int4
  bool weight_only = false;      // --weight-only: int8 weights, float activations
  bool cle = false;
  // auto: activation equalization for 8-bit activations (int8 and mixed), none for int16 and
  // weight-only, whose activations do not need it | activations | none
  std::string equalize = "auto";
  bool bias_correction = false;
  std::string weight_rounding = "nearest";           // nearest | adaptive
  std::string conv_activations = "float";            // float | lookup (QuantizeOptions::conv_regions)
  std::string size, mean, std_dev, layout = "nchw";  // image folders: preprocessing
};

struct QuantizeModelResult {
  std::string summary;      // the lines `nfuse quantize` prints
  std::string report_json;  // the per-layer report (written to options.report too, when set)
};

// Runs the workflow; kInvalidArgument for a bad option, otherwise the failing step's error.
Result<QuantizeModelResult> quantize_model(const QuantizeModelOptions& options);

}  // namespace nfuse::quant
