#include "cli_common.h"

#include "commands.h"

#include <cstdio>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/context_model.h"

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
  const std::string pin_error = parse_pin_flags(args.pins, &options.partition.pins);
  if (!pin_error.empty()) return invalid_argument(pin_error);
  options.tile_rows = args.tile_rows;
  // Packed weights are recorded so `nfuse compile` can save them (they are the ops' own buffers).
  options.packs = std::make_shared<backends::PackStore>(true);
  return options;
}

Result<std::unique_ptr<runtime::Session>> open_session(const CommonArgs& args) {
  NFUSE_ASSIGN_OR_RETURN(runtime::SessionOptions options, session_options(args));
  return open_session(args, std::move(options));
}

Result<std::unique_ptr<runtime::Session>> open_session(const CommonArgs& args, runtime::SessionOptions options) {
  if (runtime::is_context_file(args.model)) {
    runtime::ContextLoadOptions lo;
    lo.compat = args.compat == "strict" ? context::CompatMode::kStrict : context::CompatMode::kPermissive;
    NFUSE_ASSIGN_OR_RETURN(auto binary, runtime::ContextModel::open_file(args.model, lo));
    for (const std::string& reason : binary->verdict().reasons)
      std::fprintf(stderr, "nfuse: warning: context binary is suboptimal on this device: %s\n", reason.c_str());
    NFUSE_ASSIGN_OR_RETURN(auto graph, binary->graph(&options));
    return runtime::Session::create(std::move(graph), options);
  }
  NFUSE_ASSIGN_OR_RETURN(auto graph, load(args.model));
  return runtime::Session::create(std::move(graph), options);
}

Result<std::map<std::string, std::vector<int64_t>>> parse_shapes(const std::vector<std::string>& flags) {
  std::map<std::string, std::vector<int64_t>> out;
  const std::string error = parse_shape_flags(flags, &out);
  if (!error.empty()) return invalid_argument(error);
  return out;
}

std::vector<AssumedInput> assumed_inputs(const ir::Graph& graph,
                                         const std::map<std::string, std::vector<int64_t>>& overrides) {
  std::vector<AssumedInput> out;
  for (const ir::Value* in : graph.inputs()) {
    if (overrides.count(in->name) || in->type.shape.is_static()) continue;
    AssumedInput a{in->name, {}, {}};
    for (const ir::Dim& d : in->type.shape.dims()) {
      a.dims.push_back(d.is_static() ? d.value : -1);
      a.symbols.push_back(d.is_static() ? "" : d.symbol);
    }
    out.push_back(std::move(a));
  }
  return out;
}

Status with_assumed(const Status& status, const std::vector<AssumedInput>& assumed) {
  return status.ok() ? status : Status(status.code(), with_assumed_dims(status.message(), assumed));
}

int report(const Status& status) {
  std::fprintf(stderr, "nfuse: error: %s\n", status.to_string().c_str());
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace nfuse::cli
