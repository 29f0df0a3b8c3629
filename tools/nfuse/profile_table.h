// `nfuse bench --profile`: where the time of the timed runs went, by op type and by node.
#pragma once

#include <nlohmann/json.hpp>

#include "backends/run_profile.h"

namespace nfuse::cli {

// Per-run means: op types by total time, then the `top_nodes` slowest nodes. Nodes that ran on a
// reference kernel are marked, so a slow fallback shows as one.
void print_profile(const backends::RunProfile& profile, size_t top_nodes);
nlohmann::json profile_json(const backends::RunProfile& profile);

}  // namespace nfuse::cli
