// Per-node timings of profiled runs (backends::RunProfile) summarised as JSON: per-run means by
// op type and by node, slowest first, with the backend of each and whether it ran on a reference
// kernel (so a slow fallback shows as one). Keys: runs, ms_in_nodes, op_types[{op_type, backend,
// reference_kernel, nodes, ms_per_run}], nodes[{node, backend, reference_kernel, ms_per_run}].
#pragma once

#include <nlohmann/json.hpp>

#include "backends/run_profile.h"

namespace nfuse::runtime {

nlohmann::json profile_summary_json(const backends::RunProfile& profile);

}  // namespace nfuse::runtime
