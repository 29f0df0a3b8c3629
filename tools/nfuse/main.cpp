// nfuse: inspect, run, benchmark and export ONNX models.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "runtime/builtins.h"

namespace {

void add_common(CLI::App* app, nfuse::cli::CommonArgs* a, bool with_json) {
  app->add_option("model", a->model, "ONNX model file or context binary (.nfc)")->required();
  app->add_option("--shape", a->shapes, "input shape, NAME=1x3x224x224 (for symbolic dims)");
  app->add_option("--backend", a->backend, "backend to run on (ref)");
  app->add_option("--threads", a->threads, "intra-op threads")->check(CLI::PositiveNumber);
  if (with_json) app->add_flag("--json", a->json, "machine-readable output");
  app->add_flag("--no-optimize", a->no_optimize, "run the graph as imported (no optimization passes)");
  app->add_option("--outputs", a->outputs, "keep only these outputs (comma-separated) and what they need")
      ->delimiter(',');
  app->add_option("--prefer", a->prefer, "--backend auto: backends in order of preference (fusion,cpu)")->delimiter(',');
  app->add_option("--pin", a->pins, "run a node or every node of an op type on a backend, NODE_OR_OPTYPE=BACKEND");
  app->add_option("--deny", a->deny, "keep these op types off the preferred backends (comma-separated)")->delimiter(',');
  app->add_flag("--require-full-offload", a->require_full_offload,
                "fail, listing them, if any node would fall back from the first preferred backend");
  app->add_option("--device-profile", a->device_profile, "device profile JSON from `nfuse device-profile`");
  app->add_option("--tile-rows", a->tile_rows, "fusion backend: output rows per strip (default: cost model)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--compat", a->compat, "context binaries (.nfc): permissive (load a suboptimal one) or strict")
      ->check(CLI::IsMember({"permissive", "strict"}));
}

int run_cli(int argc, char** argv) {
  CLI::App app{"nfuse: on-device neural-network inference runtime"};
  app.require_subcommand(1);
  nfuse::cli::InspectArgs inspect_args;
  auto* inspect = app.add_subcommand("inspect", "inputs, outputs, op histogram, parameters, MACs, planned arena");
  add_common(inspect, &inspect_args.common, true);
  inspect->add_flag("--passes,-v", inspect_args.passes, "list what each optimization pass changed");

  nfuse::cli::RunArgs run_args;
  auto* run = app.add_subcommand("run", "run once; outputs written as .npy; a one-screen summary");
  add_common(run, &run_args.common, true);
  run->add_option("--input", run_args.inputs, "input from a file, NAME=FILE.npy (others: seeded)");
  run->add_option("--output-dir", run_args.output_dir, "write each output as NAME.npy here");
  run->add_option("--stats", run_args.stats,
                  "append the run's statistics (backends, nodes, fallback, copies, CPU time) as a JSON line to FILE");
  run->add_option("--trace", run_args.trace, "write the run as a Chrome trace (Perfetto, chrome://tracing) to FILE");

  nfuse::cli::BenchArgs bench_args;
  auto* bench = app.add_subcommand("bench", "time runs: min/median/p90 ms and peak RSS");
  add_common(bench, &bench_args.common, true);
  bench->add_option("--input", bench_args.inputs, "input from a file, NAME=FILE.npy (others: seeded)");
  bench->add_option("--warmup", bench_args.warmup, "untimed runs first")->check(CLI::NonNegativeNumber);
  bench->add_option("--runs", bench_args.runs, "timed runs")->check(CLI::PositiveNumber);
  bench->add_flag("--profile", bench_args.profile, "time every node of the timed runs: ms by op type and slowest nodes");
  bench->add_flag("--bind", bench_args.bind,
                  "bind inputs and outputs to 64-byte aligned buffers once and run in place (zero-copy I/O)");
  bench->add_flag("--traffic", bench_args.traffic, "arena bytes per inference: fused plan vs layer by layer, per group");
  bench->add_option("--stats", bench_args.stats,
                    "write every run's statistics (warm-up and timed) to FILE, one JSON line per run");
  bench->add_option("--trace", bench_args.trace,
                    "write the timed runs as a Chrome trace (Perfetto, chrome://tracing) to FILE (nodes are timed)");

  bool markdown = false;
  auto* ops = app.add_subcommand("ops", "list supported ops and the backends that run them");
  ops->add_flag("--markdown", markdown, "as a Markdown table (docs/ops.md)");

  nfuse::cli::ExportArgs export_args;
  auto* exp = app.add_subcommand("export", "write the model (optionally optimized) back as standard ONNX");
  exp->add_option("model", export_args.model, "ONNX model file")->required();
  exp->add_option("-o,--output", export_args.output, "output .onnx file")->required();
  exp->add_flag("--optimize", export_args.optimize, "run the optimization passes first (fusions cannot be exported)");
  exp->add_flag("--no-fusions", export_args.no_fusions, "with --optimize: skip the fusion passes (nfuse-only ops)");

  nfuse::cli::QuantizeArgs quantize_args;
  auto* quantize = app.add_subcommand("quantize", "post-training static INT8 quantization to a QDQ ONNX model");
  quantize->add_option("model", quantize_args.model, "ONNX model file (float32)")->required();
  quantize->add_option("--calib", quantize_args.calib, "folder of .npy calibration inputs or PNG/JPEG images")->required();
  quantize->add_option("-o,--output", quantize_args.output, "output QDQ .onnx file")->required();
  quantize->add_option("--report", quantize_args.report, "per-layer error report (JSON)");
  quantize->add_option("--method", quantize_args.method, "minmax|percentile|mse|entropy|sqnr|auto (per tensor)");
  quantize->add_option("--percentile", quantize_args.percentile, "for --method percentile");
  quantize->add_option("--act", quantize_args.act, "activation scheme: u8 (asymmetric) or s8 (symmetric)");
  quantize->add_option("--calib-limit", quantize_args.calib_limit, "use at most N calibration files")
      ->check(CLI::NonNegativeNumber);
  quantize->add_option("--eval", quantize_args.eval, "held-out folder (.npy inputs or images) for the report");
  quantize->add_option("--threads", quantize_args.threads, "cpu threads")->check(CLI::PositiveNumber);
  quantize->add_option("--html", quantize_args.html, "per-layer report as a self-contained HTML page");
  quantize->add_option("--precision", quantize_args.precision, "int8|int16|mixed");
  quantize->add_option("--target-cosine", quantize_args.target_cosine, "--precision mixed: output cosine to reach");
  quantize->add_option("--promote", quantize_args.promote,
                       "--precision mixed: auto (int16 where it helps, else float; the default), int16 or float");
  quantize->add_option("--weights", quantize_args.weights, "int8|int4 (int4: weight-only, MatMul)");
  quantize->add_flag("--weight-only", quantize_args.weight_only,
                     "int8 weights per channel, activations in float (the accuracy floor of 8-bit weights)");
  quantize->add_flag("--cle", quantize_args.cle, "cross-layer equalization before calibration");
  quantize->add_option("--equalize", quantize_args.equalize,
                       "auto|activations|none: per-channel activation ranges equalized before calibration "
                       "(auto: for 8-bit activations)");
  quantize->add_flag("--bias-correction", quantize_args.bias_correction, "correct the bias for weight rounding");
  quantize->add_option("--weight-rounding", quantize_args.weight_rounding,
                       "nearest|adaptive (adaptive: each layer's weights rounded to minimise its output error)");
  quantize->add_option("--conv-activations", quantize_args.conv_activations,
                       "float|lookup: the activation after a Conv (8-bit) runs on its exact accumulator (float), or on "
                       "its 8-bit output as a table (lookup: faster, less accurate)");
  quantize->add_option("--size", quantize_args.size, "image folders: HxW to resize to (default: model input)");
  quantize->add_option("--mean", quantize_args.mean, "image folders: per-channel mean, 0..255 units");
  quantize->add_option("--std", quantize_args.std_dev, "image folders: per-channel std, 0..255 units");
  quantize->add_option("--layout", quantize_args.layout, "image folders: nchw|nhwc");

  nfuse::cli::PartitionArgs partition_args;
  partition_args.common.backend = "auto";
  auto* partition = app.add_subcommand("partition", "where each node runs and why (cost-model partitioner report)");
  add_common(partition, &partition_args.common, true);
  partition->add_option("--report", partition_args.report, "write the report as JSON here");

  nfuse::cli::StressArgs stress_args;
  auto* stress = app.add_subcommand(
      "stress",
      "many models at once: priorities, rates, fences, a render task; against a naive baseline and each model alone");
  stress->add_option("config", stress_args.config, "JSON config (see README: nfuse stress)");
  stress->add_option("--context", stress_args.contexts,
                     "a model, NAME:MODEL:PRIORITY:HZ[:INPUT=DIMS] (HZ 0: flat out)");
  stress->add_option("--duration", stress_args.duration_s, "seconds of each of the scheduled and baseline phases");
  stress->add_option("--solo", stress_args.solo_s, "seconds of each model alone (default min(duration, 10))");
  stress->add_option("--threads", stress_args.threads, "worker threads of the runtime (and of each baseline session)");
  stress->add_option("--mode", stress_args.mode, "burst | sustained_high_performance | balanced | power_saver");
  stress->add_flag("--no-baseline", stress_args.no_baseline, "skip the naive-baseline phase");
  stress->add_option("--json", stress_args.json, "write the report as JSON to FILE");
  stress->add_option("--trace", stress_args.trace, "write the scheduled phase as a Chrome trace to FILE");

  nfuse::cli::CompileArgs compile_args;
  compile_args.common.backend = "auto";
  auto* compile = app.add_subcommand("compile",
                                     "prepare a context binary (.nfc): optimized graph and plan options, "
                                     "weights aligned for loading by mmap");
  add_common(compile, &compile_args.common, false);
  compile->add_option("-o,--output", compile_args.output, "output .nfc file")->required();

  nfuse::cli::CheckArgs check_args;
  auto* check = app.add_subcommand("check", "judge a context binary against this device: valid, suboptimal or invalid");
  check->add_option("binary", check_args.binary, "context binary (.nfc)")->required();
  check->add_option("--model", check_args.source_model, "the ONNX model it should have been compiled from");
  check->add_option("--compat", check_args.compat, "permissive or strict (strict: suboptimal fails)")
      ->check(CLI::IsMember({"permissive", "strict"}));
  check->add_flag("--full", check_args.full, "also check every section's checksum and the graph (maps the file)");
  check->add_flag("--json", check_args.json, "machine-readable output");

  nfuse::cli::DeviceProfileArgs device_profile_args;
  auto* device_profile = app.add_subcommand("device-profile", "measure this machine for the partitioner's cost model");
  device_profile->add_option("-o,--output", device_profile_args.output, "write the profile JSON here");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (inspect->parsed()) return nfuse::cli::cmd_inspect(inspect_args);
  if (run->parsed()) return nfuse::cli::cmd_run(run_args);
  if (bench->parsed()) return nfuse::cli::cmd_bench(bench_args);
  if (ops->parsed()) return nfuse::cli::cmd_ops(markdown);
  if (exp->parsed()) return nfuse::cli::cmd_export(export_args);
  if (quantize->parsed()) return nfuse::cli::cmd_quantize(quantize_args);
  if (partition->parsed()) return nfuse::cli::cmd_partition(partition_args);
  if (compile->parsed()) return nfuse::cli::cmd_compile(compile_args);
  if (check->parsed()) return nfuse::cli::cmd_check(check_args);
  if (stress->parsed()) return nfuse::cli::cmd_stress(stress_args);
  if (device_profile->parsed()) return nfuse::cli::cmd_device_profile(device_profile_args);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing below should throw; a std::bad_alloc from a huge model is still an error, not a crash.
  try {
    nfuse::register_builtins();
    return run_cli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nfuse: error: %s\n", e.what());
    return 1;
  }
}
