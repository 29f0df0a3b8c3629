#include "runtime/run_stats.h"

#include <sys/resource.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "compile/plan_traffic.h"
#include "partition/partitioner.h"

namespace nfuse::runtime {

RunStats plan_run_stats(const compile::Plan& plan, const std::string& first_choice) {
  RunStats s;
  std::string first = first_choice;
  if (plan.partition_report && !plan.partition_report->prefer.empty()) first = plan.partition_report->prefer.front();
  size_t fallback = 0;
  for (const compile::Step& step : plan.steps) {
    const std::string& name = step.partition.backend;
    auto it =
        std::find_if(s.backends.begin(), s.backends.end(), [&](const BackendRunStats& b) { return b.backend == name; });
    if (it == s.backends.end()) it = s.backends.insert(s.backends.end(), BackendRunStats{name});
    const size_t nodes = step.partition.nodes.size();
    const size_t reference = step.compiled->reference_nodes().size();
    it->nodes += nodes;
    it->reference_nodes += reference;
    s.nodes += nodes;
    s.reference_nodes += reference;
    fallback += name == first ? reference : nodes;
  }
  s.arena_bytes = static_cast<uint64_t>(compile::plan_traffic(plan).fused_bytes);
  s.fallback_ratio = s.nodes ? static_cast<double>(fallback) / static_cast<double>(s.nodes) : 0.0;
  return s;
}

double process_cpu_seconds() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0.0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

std::string RunStats::to_json() const {
  nlohmann::json b = nlohmann::json::array();
  for (const BackendRunStats& x : backends)
    b.push_back({{"backend", x.backend}, {"ms", x.ms}, {"nodes", x.nodes}, {"reference_nodes", x.reference_nodes}});
  nlohmann::json j = {{"run", run},
                      {"wall_ms", wall_ms},
                      {"queue_wait_ms", queue_wait_ms},
                      {"cpu_seconds", cpu_seconds},
                      {"backends", b},
                      {"nodes", nodes},
                      {"reference_nodes", reference_nodes},
                      {"fallback_ratio", fallback_ratio},
                      {"arena_bytes", arena_bytes},
                      {"input_bytes_copied", input_bytes_copied},
                      {"output_bytes_copied", output_bytes_copied}};
  return j.dump();
}

}  // namespace nfuse::runtime
