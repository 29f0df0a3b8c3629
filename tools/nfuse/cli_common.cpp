#include "cli_common.h"

#include "commands.h"

#include <sys/resource.h>

#include <cstdio>
#include <random>
#include <sstream>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/npy.h"

namespace nfuse::cli {

Result<std::unique_ptr<ir::Graph>> load(const std::string& path) { return frontend::onnx::load_model(path); }

Result<runtime::SessionOptions> session_options(const CommonArgs& args) {
  runtime::SessionOptions options;
  options.backend = args.backend;
  options.threads = args.threads;
  options.optimize = !args.no_optimize;
  options.outputs = args.outputs;
  options.partition.prefer = args.prefer;
  options.partition.deny = args.deny;
  options.partition.require_full_offload = args.require_full_offload;
  options.partition.device_profile = args.device_profile;
  for (const std::string& pin : args.pins) {
    const size_t eq = pin.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pin.size())
      return invalid_argument("--pin '" + pin + "' must look like NODE_OR_OPTYPE=BACKEND");
    options.partition.pins[pin.substr(0, eq)] = pin.substr(eq + 1);
  }
  options.tile_rows = args.tile_rows;
  return options;
}

Result<std::unique_ptr<runtime::Session>> open_session(const CommonArgs& args) {
  NFUSE_ASSIGN_OR_RETURN(runtime::SessionOptions options, session_options(args));
  NFUSE_ASSIGN_OR_RETURN(auto graph, load(args.model));
  return runtime::Session::create(std::move(graph), options);
}

Result<std::map<std::string, std::vector<int64_t>>> parse_shapes(const std::vector<std::string>& flags) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& f : flags) {
    const size_t eq = f.rfind('=');
    if (eq == std::string::npos || eq == 0) return invalid_argument("--shape '" + f + "' must look like NAME=1x3x224x224");
    std::vector<int64_t> dims;
    std::stringstream ss(f.substr(eq + 1));
    std::string part;
    while (std::getline(ss, part, 'x')) {
      char* end = nullptr;
      const long long v = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || *end != '\0' || v < 0) return invalid_argument("--shape '" + f + "': '" + part + "' is not a dimension");
      dims.push_back(v);
    }
    out[f.substr(0, eq)] = dims;
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_inputs(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> out;
  for (const std::string& f : flags) {
    const size_t eq = f.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size()) {
      return invalid_argument("--input '" + f + "' must look like NAME=FILE.npy");
    }
    out[f.substr(0, eq)] = f.substr(eq + 1);
  }
  return out;
}

Result<runtime::NamedTensors> make_inputs(const runtime::Session& session,
                                          const std::map<std::string, std::string>& files,
                                          const std::map<std::string, std::vector<int64_t>>& shapes) {
  for (const auto& [name, file] : files) {
    const ir::Value* v = session.graph().find_value(name);
    if (!v || !v->is_graph_input) return invalid_argument("--input: the model has no input named '" + name + "'");
  }
  for (const auto& [name, dims] : shapes) {
    const ir::Value* v = session.graph().find_value(name);
    if (!v || !v->is_graph_input) return invalid_argument("--shape: the model has no input named '" + name + "'");
  }
  const auto dims = session.default_input_dims(shapes);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  runtime::NamedTensors inputs;
  for (const ir::Value* in : session.graph().inputs()) {
    auto f = files.find(in->name);
    if (f != files.end()) {
      NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, runtime::read_npy(f->second));
      inputs.emplace_back(in->name, std::move(t));
      continue;
    }
    ir::Tensor t = ir::Tensor::allocate(in->type.dtype, dims.at(in->name));
    if (ir::dtype_is_float(t.dtype())) {
      for (int64_t i = 0; i < t.numel(); ++i) ir::store_from_double(t.dtype(), t.raw(), i, uniform(rng));
    }
    inputs.emplace_back(in->name, std::move(t));
  }
  return inputs;
}

int report(const Status& status) {
  std::fprintf(stderr, "nfuse: error: %s\n", status.to_string().c_str());
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::string file_safe(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  if (s.empty() || s[0] == '.') s = "_" + s;
  return s;
}

double peak_rss_mb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace nfuse::cli
