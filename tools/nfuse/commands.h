// The `nfuse` subcommands. Each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nfuse::cli {

struct CommonArgs {
  std::string model;
  std::vector<std::string> shapes;  // NAME=1x3x224x224
  std::string backend = "ref";
  int threads = 1;
  bool json = false;
  bool no_optimize = false;          // run the graph exactly as imported
  std::vector<std::string> outputs;  // keep only these graph outputs
  // Placement (see partition::PartitionOptions).
  std::vector<std::string> prefer;   // backend order for --backend auto
  std::vector<std::string> pins;     // NODE_OR_OPTYPE=backend
  std::vector<std::string> deny;     // op types kept off the preferred backends
  bool require_full_offload = false;
  std::string device_profile;        // JSON from `nfuse device-profile`
  int tile_rows = 0;                 // fusion strips (0: cost model)
  std::string compat = "permissive";  // context binaries: permissive | strict
};



struct RunArgs {
  CommonArgs common;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir;
  std::string stats;  // append the run's statistics record (one JSON line) to this file
  std::string trace;  // write the run as a Chrome trace to this file
};

struct BenchArgs {
  CommonArgs common;
  std::vector<std::string> inputs;
  int warmup = 10;
  int runs = 50;
  bool profile = false;  // time every node during the timed runs and print where the time went
  bool traffic = false;  // arena bytes per inference, fused vs layer by layer, per fused group
  bool bind = false;     // zero-copy I/O: inputs and outputs bound to aligned buffers once
  std::string stats;     // one JSON line per run (warm-up and timed) with its statistics
  std::string trace;     // the timed runs as a Chrome trace
};

struct InspectArgs {
  CommonArgs common;
  bool passes = false;  // print what each optimization pass changed
};

struct ExportArgs {
  std::string model;
  std::string output;       // OUT.onnx
  bool optimize = false;    // run nfuse's optimization passes first
  bool no_fusions = false;  // with optimize: skip the passes whose results are not standard ONNX
};

struct QuantizeArgs {
  std::string model;
  std::string calib;   // folder of .npy files (one input tensor each) or of PNG/JPEG images
  std::string output;  // OUT.onnx (QDQ)
  std::string report;  // REPORT.json
  std::string eval;    // optional held-out folder (.npy or images) for the report
  std::string method = "auto";
  std::string act = "u8";
  double percentile = 99.99;
  int64_t calib_limit = 0;  // 0: every file
  int threads = 1;
  std::string html;                  // REPORT.html (self-contained page)
  std::string precision = "int8";    // int8 | int16 | mixed
  double target_cosine = 0.99;       // --precision mixed: final-output cosine to reach
  std::string promote = "auto";      // --precision mixed: auto (int16 first), int16 (W8A16) or float
  std::string weights = "int8";      // int8 | int4 (weight-only, MatMul)
  bool weight_only = false;
  bool cle = false;                  // cross-layer equalization
  std::string equalize = "auto";     // auto | activations | none
  bool bias_correction = false;
  std::string weight_rounding = "nearest";
  std::string conv_activations = "float";
  // Image folders (--calib / --eval holding PNG/JPEG): preprocessing into the model's input.
  std::string size;    // "HxW" (or "N" for NxN); default: the model input's static H, W
  std::string mean;    // "r,g,b" in 0..255 pixel units (default 0,0,0)
  std::string std_dev;     // "r,g,b" in 0..255 pixel units (default 255,255,255 -> [0,1])
  std::string layout = "nchw";  // nchw | nhwc
};

int cmd_inspect(const InspectArgs& args);
int cmd_run(const RunArgs& args);
int cmd_bench(const BenchArgs& args);
int cmd_ops(bool markdown);
int cmd_export(const ExportArgs& args);
int cmd_quantize(const QuantizeArgs& args);

struct PartitionArgs {
  CommonArgs common;   // backend defaults to "auto" for this command
  std::string report;  // partition.json
};
struct DeviceProfileArgs {
  std::string output;  // profile.json (empty: print it)
};
int cmd_partition(const PartitionArgs& args);

struct CompileArgs {
  CommonArgs common;   // backend defaults to "auto" for this command
  std::string output;  // OUT.nfc
};
struct CheckArgs {
  std::string binary;        // MODEL.nfc
  std::string source_model;  // --model: the ONNX file it should come from
  std::string compat = "permissive";
  bool full = false;  // also map the file: every section's checksum and the graph's structure
  bool json = false;
};
struct StressArgs {
  std::string config;                 // JSON (tools/nfuse/stress_config.h); flags below override it
  std::vector<std::string> contexts;  // NAME:MODEL:PRIORITY:HZ[:INPUT=DIMS]
  double duration_s = 0.0, solo_s = 0.0;
  int threads = 0;
  std::string mode;
  bool no_baseline = false;
  std::string json;   // the report as JSON
  std::string trace;  // the scheduled phase as a Chrome trace
};
int cmd_stress(const StressArgs& args);
int cmd_compile(const CompileArgs& args);
int cmd_check(const CheckArgs& args);
int cmd_device_profile(const DeviceProfileArgs& args);

}  // namespace nfuse::cli
