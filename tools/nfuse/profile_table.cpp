#include "profile_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace nfuse::cli {
namespace {

struct Row {
  std::string key;
  std::string backend;
  size_t nodes = 0;  // distinct nodes (for op types) per run
  bool reference = false;
  double us = 0.0;   // summed over all runs
};

std::vector<Row> by_op_type(const backends::RunProfile& p) {
  std::map<std::string, Row> rows;
  for (const backends::NodeTiming& t : p.nodes) {
    Row& r = rows[t.node->op_type + (t.reference ? " (ref kernel)" : "")];
    r.key = t.node->op_type;
    r.backend = t.backend;
    r.reference = t.reference;
    r.us += t.us;
    ++r.nodes;
  }
  std::vector<Row> out;
  for (auto& [k, r] : rows) {
    r.nodes = p.runs ? r.nodes / p.runs : r.nodes;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.us > b.us; });
  return out;
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
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.us > b.us; });
  return out;
}

double total_us(const backends::RunProfile& p) {
  double s = 0.0;
  for (const backends::NodeTiming& t : p.nodes) s += t.us;
  return s;
}

}  // namespace

void print_profile(const backends::RunProfile& profile, size_t top_nodes) {
  const double runs = profile.runs ? static_cast<double>(profile.runs) : 1.0;
  const double total = total_us(profile);
  std::printf("\nprofile  mean per run over %zu runs, %.3f ms in nodes\n", profile.runs, total / runs / 1000.0);
  std::printf("  %-34s %6s %10s %7s\n", "op type", "nodes", "ms/run", "%");
  for (const Row& r : by_op_type(profile)) {
    const std::string name = r.key + (r.reference ? " (ref kernel)" : "");
    std::printf("  %-34s %6zu %10.3f %6.1f%%\n", name.c_str(), r.nodes, r.us / runs / 1000.0,
                total > 0 ? 100.0 * r.us / total : 0.0);
  }
  const std::vector<Row> nodes = by_node(profile);
  std::printf("  slowest nodes:\n");
  for (size_t i = 0; i < std::min(top_nodes, nodes.size()); ++i) {
    const Row& r = nodes[i];
    std::printf("  %10.3f ms %6.1f%%  %s%s\n", r.us / runs / 1000.0, total > 0 ? 100.0 * r.us / total : 0.0,
                r.key.c_str(), r.reference ? "  (ref kernel)" : "");
  }
}

nlohmann::json profile_json(const backends::RunProfile& profile) {
  const double runs = profile.runs ? static_cast<double>(profile.runs) : 1.0;
  nlohmann::json types = nlohmann::json::array();
  for (const Row& r : by_op_type(profile)) {
    types.push_back({{"op_type", r.key}, {"backend", r.backend}, {"reference_kernel", r.reference},
                     {"nodes", r.nodes}, {"ms_per_run", r.us / runs / 1000.0}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const Row& r : by_node(profile)) {
    nodes.push_back({{"node", r.key}, {"backend", r.backend}, {"reference_kernel", r.reference},
                     {"ms_per_run", r.us / runs / 1000.0}});
  }
  return {{"runs", profile.runs}, {"op_types", types}, {"nodes", nodes}};
}

}  // namespace nfuse::cli
