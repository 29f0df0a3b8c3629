// The session of `nfuse run` and `nfuse bench`, opened through the public C++ API (nfuse.hpp)
// only: what an application linking libnfuse can do, these commands do the same way.
// Include no internal header next to this one (both define nfuse::Status).
#pragma once

#include <nfuse/nfuse.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli_flags.h"
#include "commands.h"

namespace nfuse::cli {

struct ApiSession {
  Runtime runtime;
  Model model;
  Session session;
  double open_ms = 0.0;  // import, optimization and (static shapes) planning
  std::string backend;   // what the session runs on (a context binary's own backend)
  bool from_context = false;
  std::vector<IoInfo> inputs, outputs;
  std::vector<Tensor> input_tensors;  // in input order
  std::vector<bool> input_seeded;     // true where no --input file was given
  std::vector<std::pair<std::string, const Tensor*>> feeds;
  std::vector<AssumedInput> assumed;  // seeded inputs whose symbolic dims were set to 1
};

// Opens the model as the common flags say and makes its inputs: each --input NAME=FILE.npy, the
// others seeded at their --shape or model dims (symbolic dims as 1): floats uniform in [0, 1)
// from one fixed seed, integers 0, bools false.
// With `shared`, the session is created in that runtime (out->runtime stays empty).
Status open_api_session(const CommonArgs& args, const std::vector<std::string>& input_flags, ApiSession* out,
                        const Runtime* shared = nullptr);
// Prints "nfuse: error: <status>" to stderr; exit code 2 for invalid arguments, else 1.
int report_api(const Status& status);
// report_api for a failed run: the message also names the symbolic dims that were set to 1.
int report_run_failure(const Status& status, const ApiSession& s);

// Writes the session's last run statistics (nfuse_session_last_run_stats) as one JSON line to
// `file`, with "phase" added ("run", "warmup", "timed").
Status write_run_stats(Session& session, std::FILE* file, const char* phase);

// Writes the session's profiled runs as a Chrome trace (nfuse_session_trace) to `path`.
Status write_trace(Session& session, const std::string& path);
// Element i of a tensor as a double (0 for dtypes without a numeric reading).
double element_as_double(const Tensor& t, size_t i);

}  // namespace nfuse::cli
