// `nfuse quantize MODEL --calib DIR -o OUT.onnx [--report R.json] [--html R.html] [--eval DIR]
// [--method ...] [--act u8|s8] [--precision int8|int16|mixed] [--target-cosine C]`: post-training
// static quantization into a standard QDQ ONNX model; the workflow is quant::quantize_model
// (src/quant/quantize_model.h), shared with nfuse_quantize() and nfuse.quantize().
#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "quant/quantize_model.h"

namespace nfuse::cli {

int cmd_quantize(const QuantizeArgs& args) {
  quant::QuantizeModelOptions o;
  o.model = args.model;
  o.calib = args.calib;
  o.output = args.output;
  o.report = args.report;
  o.html = args.html;
  o.eval = args.eval;
  o.method = args.method;
  o.act = args.act;
  o.percentile = args.percentile;
  o.calib_limit = args.calib_limit;
  o.threads = args.threads;
  o.precision = args.precision;
  o.target_cosine = args.target_cosine;
  o.promote = args.promote;
  o.weights = args.weights;
  o.weight_only = args.weight_only;
  o.cle = args.cle;
  o.equalize = args.equalize;
  o.bias_correction = args.bias_correction;
  o.weight_rounding = args.weight_rounding;
  o.conv_activations = args.conv_activations;
  o.size = args.size;
  o.mean = args.mean;
  o.std_dev = args.std_dev;
  o.layout = args.layout;
  auto result = quant::quantize_model(o);
  if (!result.ok()) return report(result.status());
  std::fputs(result->summary.c_str(), stdout);
  return 0;
}

}  // namespace nfuse::cli
