// `nfuse bench --profile`: where the time of the timed runs went, printed from the session's
// profile JSON (nfuse_session_profile: op types by total time, then the slowest nodes). Nodes that
// ran on a reference kernel are marked, so a slow fallback shows as one.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace nfuse::cli {

void print_profile(const nlohmann::json& profile, size_t top_nodes);

}  // namespace nfuse::cli
