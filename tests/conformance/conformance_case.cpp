#include "conformance_case.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"
#include "runtime/session.h"

namespace nfuse::conformance {
namespace fs = std::filesystem;
namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

std::string compare(const ir::Tensor& expected, const ir::Tensor& got, size_t k) {
  std::ostringstream why;
  if (expected.dtype() != got.dtype()) {
    why << "output " << k << ": dtype " << ir::dtype_name(got.dtype()) << ", expected " << ir::dtype_name(expected.dtype());
    return why.str();
  }
  if (expected.dims() != got.dims()) {
    why << "output " << k << ": shape " << ir::dims_to_string(got.dims()) << ", expected "
        << ir::dims_to_string(expected.dims());
    return why.str();
  }
  int mismatches = 0;
  int64_t first = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double e = expected.get_double(i);
    const double g = got.get_double(i);
    bool ok;
    if (std::isnan(e)) ok = std::isnan(g);
    else if (std::isinf(e)) ok = e == g;
    else ok = std::fabs(g - e) <= kAtol + kRtol * std::fabs(e);
    if (!ok && mismatches++ == 0) first = i;
  }
  if (mismatches) {
    why << "output " << k << ": " << mismatches << " of " << expected.numel() << " values differ; first at " << first
        << ": got " << got.get_double(first) << ", expected " << expected.get_double(first);
    return why.str();
  }
  return "";
}

// ONNX 1.12's generator stored bfloat16 tensors with data_type UINT16; read them as the bf16
// the model declares.
ir::Tensor as_declared(ir::Tensor t, ir::DType declared) {
  if (declared == ir::DType::kBF16 && t.dtype() == ir::DType::kU16) return t.bitcast(ir::DType::kBF16);
  return t;
}

std::vector<fs::path> sorted_pb(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int j = 0;; ++j) {
    fs::path p = dir / (prefix + std::to_string(j) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

}  // namespace

CaseResult run_case(const std::string& dir, const std::string& backend) {
  CaseResult r;
  r.op = "(import failed)";
  auto graph = frontend::onnx::load_model((fs::path(dir) / "model.onnx").string());
  if (!graph.ok()) {
    r.message = "load: " + graph.status().to_string();
    return r;
  }
  r.op = (*graph)->nodes().size() == 1 ? (*graph)->nodes()[0]->op_type : "composite";
  std::vector<std::string> input_names;
  std::vector<ir::DType> input_dtypes, output_dtypes;
  for (const ir::Value* v : (*graph)->inputs()) input_names.push_back(v->name), input_dtypes.push_back(v->type.dtype);
  for (const ir::Value* v : (*graph)->outputs()) output_dtypes.push_back(v->type.dtype);
  runtime::SessionOptions options;
  options.backend = backend;
  auto session = runtime::Session::create(std::move(graph).value(), options);
  if (!session.ok()) {
    r.message = "session: " + session.status().to_string();
    return r;
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    r.message = "no test_data_set_* folder";
    return r;
  }
  for (const fs::path& set : sets) {
    runtime::NamedTensors inputs;
    const auto input_files = sorted_pb(set, "input_");
    if (input_files.size() > input_names.size()) {
      r.message = "case has " + std::to_string(input_files.size()) + " inputs, model takes " +
                  std::to_string(input_names.size());
      return r;
    }
    for (size_t j = 0; j < input_files.size(); ++j) {
      auto t = frontend::onnx::load_tensor_file(input_files[j].string());
      if (!t.ok()) {
        r.message = "input: " + t.status().to_string();
        return r;
      }
      inputs.emplace_back(input_names[j], as_declared(std::move(t).value(), input_dtypes[j]));
    }
    auto outputs = (*session)->run(inputs);
    if (!outputs.ok()) {
      r.message = "run: " + outputs.status().to_string();
      return r;
    }
    const auto output_files = sorted_pb(set, "output_");
    if (output_files.size() != outputs->size()) {
      r.message = "model produced " + std::to_string(outputs->size()) + " outputs, case expects " +
                  std::to_string(output_files.size());
      return r;
    }
    for (size_t k = 0; k < output_files.size(); ++k) {
      auto expected = frontend::onnx::load_tensor_file(output_files[k].string());
      if (!expected.ok()) {
        r.message = "expected output: " + expected.status().to_string();
        return r;
      }
      std::string why = compare(as_declared(*expected, output_dtypes[k]), (*outputs)[k], k);
      if (!why.empty()) {
        r.message = set.filename().string() + ": " + why;
        return r;
      }
    }
  }
  r.passed = true;
  return r;
}

}  // namespace nfuse::conformance
