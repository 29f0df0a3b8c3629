// Shared pieces of the `nfuse` subcommands on internals: model loading, session options and
// error printing.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_flags.h"
#include "ir/graph.h"
#include "nfuse/status.h"
#include "runtime/session.h"

namespace nfuse::cli {

struct CommonArgs;
// Loads and verifies an ONNX model.
Result<std::unique_ptr<ir::Graph>> load(const std::string& path);
// The session options the common flags say (backend, threads, optimization, output filter,
// placement); kInvalidArgument for a malformed --pin.
Result<runtime::SessionOptions> session_options(const CommonArgs& args);
// Loads the model and creates a session as the common flags say (backend, threads,
// optimization, output filter).
Result<std::unique_ptr<runtime::Session>> open_session(const CommonArgs& args);
// The same from options the caller adjusted (session_options(args) plus its own settings).
Result<std::unique_ptr<runtime::Session>> open_session(const CommonArgs& args, runtime::SessionOptions options);
// parse_shape_flags as a Status (kInvalidArgument).
Result<std::map<std::string, std::vector<int64_t>>> parse_shapes(const std::vector<std::string>& flags);
// The graph's inputs that `overrides` (the --shape flags) does not name and whose dims are not
// all static: Session::default_input_dims sets those dims to 1.
std::vector<AssumedInput> assumed_inputs(const ir::Graph& graph,
                                         const std::map<std::string, std::vector<int64_t>>& overrides);
// `status` with the assumed dims named (with_assumed_dims), for a failed plan or run.
Status with_assumed(const Status& status, const std::vector<AssumedInput>& assumed);
// Prints "nfuse: error: <status>" to stderr and returns the exit code for it.
int report(const Status& status);

}  // namespace nfuse::cli
