#include "profile_table.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace nfuse::cli {

void print_profile(const nlohmann::json& profile, size_t top_nodes) {
  const double total = profile.value("ms_in_nodes", 0.0);
  std::printf("\nprofile  mean per run over %zu runs, %.3f ms in nodes, %.1f%% of it on reference kernels\n",
              profile.value("runs", size_t{0}), total, 100.0 * profile.value("ref_time_share", 0.0));
  std::printf("  %-34s %6s %10s %7s\n", "op type", "nodes", "ms/run", "%");
  auto share = [total](double ms) { return total > 0 ? 100.0 * ms / total : 0.0; };
  for (const nlohmann::json& r : profile.at("op_types")) {
    const bool ref = r.value("reference_kernel", false);
    const std::string name = r.value("op_type", std::string()) + (ref ? " (ref kernel)" : "");
    const double ms = r.value("ms_per_run", 0.0);
    std::printf("  %-34s %6zu %10.3f %6.1f%%\n", name.c_str(), r.value("nodes", size_t{0}), ms, share(ms));
  }
  std::printf("  slowest nodes:\n");
  const nlohmann::json& nodes = profile.at("nodes");
  for (size_t i = 0; i < std::min(top_nodes, nodes.size()); ++i) {
    const nlohmann::json& r = nodes[i];
    const double ms = r.value("ms_per_run", 0.0);
    std::printf("  %10.3f ms %6.1f%%  %s%s\n", ms, share(ms), r.value("node", std::string()).c_str(),
                r.value("reference_kernel", false) ? "  (ref kernel)" : "");
  }
}

}  // namespace nfuse::cli
