// The profiled runs of a session as a Chrome trace (the JSON that Perfetto and chrome://tracing
// open): what ran when, read from the per-node and per-partition timings the runs recorded.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "backends/run_profile.h"
#include "compile/plan.h"

namespace nfuse::runtime {

// {"displayTimeUnit": "ms", "traceEvents": [...]}: process and thread names ("M" events), then
// complete ("X") events on three kinds of track: "runs" (one per run), "partitions" (backend and
// node count) and one "ops on BACKEND" per backend (op type, reference kernel or not, the output
// shapes from `plan` when given, and the members a fused group ran with), and one "worker N" per
// intra-op worker (its busy span in each parallel section, named by the node). Timestamps are
// microseconds from the first run's start. A control-flow node's event contains its body's.
nlohmann::json chrome_trace_json(const backends::RunProfile& profile, const std::string& process_name,
                                 const compile::Plan* plan);

}  // namespace nfuse::runtime
