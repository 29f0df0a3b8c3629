// One ONNX backend test case: load model.onnx, bind input_J.pb to the J-th non-initializer
// input, run on a backend and compare every output_K.pb (rtol 1e-3, atol 1e-7, exact dtype).
#pragma once

#include <string>
#include <vector>

namespace nfuse::conformance {

struct CaseResult {
  bool passed = false;
  std::string message;  // why it failed
  std::string op;       // op type of a one-node model, else "composite"
};

CaseResult run_case(const std::string& dir, const std::string& backend);

}  // namespace nfuse::conformance
