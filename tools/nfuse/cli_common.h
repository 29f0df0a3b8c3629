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
// parse_shape_flags as a Status (kInvalidArgument).
Result<std::map<std::string, std::vector<int64_t>>> parse_shapes(const std::vector<std::string>& flags);
// Prints "nfuse: error: <status>" to stderr and returns the exit code for it.
int report(const Status& status);

}  // namespace nfuse::cli
