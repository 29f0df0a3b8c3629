// ONNX Runtime (onnxruntime-node 1.30.0 under .cache/ort, run through scripts/ort_run.js) as an
// independent oracle for the model tests that compare with it (qdq_ort_test, qdq_foreign_test).
// bench/compare_ort.sh installs it; a test without it skips, saying what to install.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "nfuse/status.h"
#include "runtime/npy.h"

namespace nfuse::testing {

inline std::filesystem::path ort_modules() {
  return std::filesystem::path(NFUSE_SOURCE_DIR) / ".cache" / "ort" / "node_modules";
}

// "" when ORT can run, else why not and what to install.
inline std::string ort_unavailable_reason() {
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    return "`node` is not on PATH: install Node.js (Debian package nodejs) and run bench/compare_ort.sh once "
           "to install onnxruntime-node; skipping the ONNX Runtime comparison";
  }
  if (!std::filesystem::exists(ort_modules() / "onnxruntime-node")) {
    return "ONNX Runtime for Node is not installed at " + (ort_modules() / "onnxruntime-node").string() +
           ": run bench/compare_ort.sh once (it runs `ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts "
           "onnxruntime-node@1.30.0` in .cache/ort); skipping the ONNX Runtime comparison";
  }
  return "";
}

// A fresh scratch folder under the system temp dir, unique to this process.
inline std::filesystem::path ort_scratch_dir(const std::string& name) {
  std::filesystem::path d =
      std::filesystem::temp_directory_path() / ("nfuse_ort_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Runs `model` on ORT (all graph optimizations, 1 thread) through scripts/ort_run.js; outputs in
// the model's output order.
inline Result<std::vector<ir::Tensor>> run_ort(const std::filesystem::path& model,
                                               const std::vector<std::pair<std::string, std::filesystem::path>>& inputs,
                                               const std::filesystem::path& out_dir) {
  std::string cmd = "NODE_PATH='" + ort_modules().string() + "' node '" + NFUSE_SOURCE_DIR + "/scripts/ort_run.js' '" +
                    model.string() + "' '" + out_dir.string() + "'";
  for (const auto& [name, file] : inputs) cmd += " '" + name + "=" + file.string() + "'";
  cmd += " > '" + (out_dir / "ort_log.txt").string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(out_dir / "ort_log.txt");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return internal_error("ORT failed on " + model.string() + ": " + text);
  }
  std::vector<ir::Tensor> outs;
  for (int i = 0; std::filesystem::exists(out_dir / ("out_" + std::to_string(i) + ".npy")); ++i) {
    NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, runtime::read_npy((out_dir / ("out_" + std::to_string(i) + ".npy")).string()));
    outs.push_back(std::move(t));
  }
  return outs;
}

}  // namespace nfuse::testing
