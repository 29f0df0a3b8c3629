// Shared pieces of the `nfuse` subcommands: model loading, --shape/--input parsing, seeded
// input generation and error printing.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

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
// "name=1x3x224x224" -> {name, dims}; several flags accumulate.
Result<std::map<std::string, std::vector<int64_t>>> parse_shapes(const std::vector<std::string>& flags);
// "name=file.npy" -> {name, file}.
Result<std::map<std::string, std::string>> parse_inputs(const std::vector<std::string>& flags);
// Inputs for a run: given .npy files, others filled from a fixed seed (floats uniform in
// [0, 1), integers 0, bools false) at the given or default dims.
Result<runtime::NamedTensors> make_inputs(const runtime::Session& session,
                                          const std::map<std::string, std::string>& files,
                                          const std::map<std::string, std::vector<int64_t>>& shapes);
// Prints "nfuse: error: <status>" to stderr and returns the exit code for it.
int report(const Status& status);
// A value name made safe as a file name.
std::string file_safe(const std::string& name);
// Peak resident set size of this process in MiB.
double peak_rss_mb();

}  // namespace nfuse::cli
