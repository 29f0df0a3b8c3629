#include "runtime/profile_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace nfuse::runtime {
namespace {

struct Row {
  std::string key;
  std::string backend;
  size_t nodes = 0;  // distinct nodes (for op types)
  bool reference = false;
  double us = 0.0;  // summed over all runs
};

std::vector<Row> sorted(std::vector<Row> rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.us > b.us; });
  return rows;
}

std::vector<Row> by_op_type(const backends::RunProfile& p) {
  std::map<std::string, Row> rows;
  // A node may be timed more than once per run (the pieces of a long op, the units of a fused
  // group): its op type counts it once.
  std::map<std::string, std::set<const ir::Node*>> distinct;
  for (const backends::NodeTiming& t : p.nodes) {
    const std::string key = t.node->op_type + (t.reference ? " (ref kernel)" : "");
    Row& r = rows[key];
    r.key = t.node->op_type;
    r.backend = t.backend;
    r.reference = t.reference;
    r.us += t.us;
    distinct[key].insert(t.node);
  }
  std::vector<Row> out;
  for (auto& [k, r] : rows) {
    r.nodes = distinct[k].size();
    out.push_back(r);
  }
  return sorted(std::move(out));
}

std::vector<Row> by_node(const backends::RunProfile& p) {
  std::map<const ir::Node*, Row> rows;
  for (const backends::NodeTiming& t : p.nodes) {
    Row& r = rows[t.node];
    r.key = t.node->label();
    r.backend = t.backend;
    r.reference = t.reference;
    r.us += t.us;
    r.nodes = 1;
  }
  std::vector<Row> out;
  for (auto& [n, r] : rows) out.push_back(r);
  return sorted(std::move(out));
}

}  // namespace

nlohmann::json profile_summary_json(const backends::RunProfile& profile) {
  const double runs = profile.runs ? static_cast<double>(profile.runs) : 1.0;
  double total_us = 0.0, reference_us = 0.0;
  for (const backends::NodeTiming& t : profile.nodes) {
    total_us += t.us;
    if (t.reference) reference_us += t.us;
  }
  nlohmann::json types = nlohmann::json::array();
  for (const Row& r : by_op_type(profile)) {
    types.push_back({{"op_type", r.key},
                     {"backend", r.backend},
                     {"reference_kernel", r.reference},
                     {"nodes", r.nodes},
                     {"ms_per_run", r.us / runs / 1000.0}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const Row& r : by_node(profile)) {
    nodes.push_back({{"node", r.key},
                     {"backend", r.backend},
                     {"reference_kernel", r.reference},
                     {"ms_per_run", r.us / runs / 1000.0}});
  }
  // The share of node time an optimized backend spent on reference kernels (its fallbacks): what
  // `nfuse bench --json` reports as ref_time_share. The ref backend's own kernels do not count.
  const double share = total_us > 0.0 ? reference_us / total_us : 0.0;
  return {{"runs", profile.runs},
          {"ms_in_nodes", total_us / runs / 1000.0},
          {"ref_time_share", share},
          {"op_types", types},
          {"nodes", nodes}};
}

}  // namespace nfuse::runtime
