// `nfuse stress`: its configuration, from a JSON file or from flags.
//
//   {"duration_s": 60, "threads": 2, "mode": "sustained_high_performance",
//    "contexts": [{"name": "det", "model": "m.onnx" | "m.nfc", "shape": {"input": [1,3,224,224]},
//                  "priority": "high", "hz": 30, "deadline_ms": 33.3, "waits_on": "seg"}, ...],
//    "render": {"fps": 60, "cpu_ms": 4, "waits_on": "seg"}}
//
// hz 0 runs flat out (no deadline); a deadline defaults to the period. A context that waits on
// another waits on the fence of that context's latest request (if it is still pending).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nfuse::cli {

struct StressContext {
  std::string name, model;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string priority = "normal";
  double hz = 0.0;
  double deadline_ms = 0.0;  // 0: the period (none when flat out)
  std::string waits_on;
  std::string backend = "auto";
};

struct StressRender {
  double fps = 60.0;
  double cpu_ms = 4.0;
  std::string waits_on;  // the context whose latest finished result each frame samples
};

struct StressConfig {
  double duration_s = 60.0;
  double solo_s = 0.0;  // each context alone, for the solo columns (0: min(duration, 10 s))
  int threads = 2;
  std::string mode = "sustained_high_performance";
  std::vector<StressContext> contexts;
  std::optional<StressRender> render;
  bool baseline = true;
};

// Reads the JSON text; "" when it holds, else what is wrong (naming the field).
std::string parse_stress_config(const std::string& json_text, StressConfig* out);
// --context NAME:MODEL:PRIORITY:HZ[:INPUT=DIMS]; "" or the error.
std::string parse_stress_context_flag(const std::string& flag, StressContext* out);
// Checks names, priorities, rates and references; "" or the first problem.
std::string check_stress_config(const StressConfig& config);

}  // namespace nfuse::cli
