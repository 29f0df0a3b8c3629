#include "partition/partition_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace nfuse::partition {
namespace {

std::string node_name(const ir::Node* n) { return n->name.empty() ? n->label() : n->name; }

nlohmann::json value_names(const std::vector<const ir::Value*>& values) {
  nlohmann::json a = nlohmann::json::array();
  for (const ir::Value* v : values) a.push_back(v->name);
  return a;
}

nlohmann::json profile_summary(const PartitionResult& r) {
  nlohmann::json j;
  j["source"] = r.profile.source;
  j["threads"] = r.threads;
  j["backends"] = nlohmann::json::array();
  for (const backends::BackendProfile& p : r.profile.backends) {
    j["backends"].push_back({{"backend", p.backend},
                             {"gflops_f32", p.gflops_f32},
                             {"dram_gbps", p.dram_gbps},
                             {"l2_gbps", p.l2_gbps},
                             {"l2_bytes", p.l2_bytes},
                             {"step_us", p.step_us},
                             {"boundary_us", p.boundary_us}});
  }
  return j;
}

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

}  // namespace

std::string partition_report_json(const PartitionResult& r, const std::string& model) {
  nlohmann::json j;
  j["model"] = model;
  j["prefer"] = r.prefer;
  j["fallback"] = r.fallback;
  j["placement_source"] = r.from_binary ? "context binary" : "partitioner";
  j["device_profile"] = profile_summary(r);
  j["nodes"] = nlohmann::json::array();
  for (const NodePlacement& p : r.nodes) {
    j["nodes"].push_back({{"name", node_name(p.node)},
                          {"op", p.node->op_type},
                          {"backend", p.backend},
                          {"reason", p.reason_text()},
                          {"reason_kind", reason_name(p.reason)},
                          {"est_us", p.est_us}});
  }
  j["partitions"] = nlohmann::json::array();
  for (const PartitionInfo& part : r.partitions) {
    nlohmann::json names = nlohmann::json::array();
    for (const ir::Node* n : part.nodes) names.push_back(node_name(n));
    j["partitions"].push_back({{"index", part.index},
                               {"backend", part.backend},
                               {"nodes", names},
                               {"inputs", value_names(part.inputs)},
                               {"outputs", value_names(part.outputs)},
                               {"est_us", part.est_us}});
  }
  j["transfers"] = nlohmann::json::array();
  for (const Transfer& t : r.transfers) {
    j["transfers"].push_back({{"tensor", t.value->name},
                              {"from", t.from},
                              {"to", t.to},
                              {"from_partition", t.from_partition},
                              {"to_partition", t.to_partition},
                              {"bytes", t.bytes},
                              {"est_us", t.est_us}});
  }
  j["est_total_us"] = r.est_total_us;
  j["fallback_ratio_nodes"] = r.fallback_ratio_nodes;
  j["fallback_ratio_time"] = r.fallback_ratio_time;
  j["warnings"] = r.warnings;
  return j.dump(2) + "\n";
}

std::string partition_summary(const PartitionResult& r) {
  std::string prefer;
  for (const std::string& b : r.prefer) prefer += (prefer.empty() ? "" : ",") + b;
  std::string s = "prefer " + prefer + " (fallback " + r.fallback + "), profile: " + r.profile.source + "\n";
  s += std::to_string(r.partitions.size()) + " partitions, " + std::to_string(r.transfers.size()) +
       " transfers, estimated " + fmt("%.1f", r.est_total_us) + " us\n";
  for (const PartitionInfo& p : r.partitions) {
    std::string range = node_name(p.nodes.front());
    if (p.nodes.size() > 1) range += " .. " + node_name(p.nodes.back());
    s += "  #" + std::to_string(p.index) + " " + p.backend + ": " + std::to_string(p.nodes.size()) + " nodes (" + range +
         "), " + fmt("%.1f", p.est_us) + " us\n";
  }
  // Why nodes left the first backend, one line per node (capped: a report file has them all).
  int listed = 0, off = 0;
  for (const NodePlacement& p : r.nodes) {
    if (p.backend == r.prefer[0]) continue;
    ++off;
    if (listed >= 8) continue;
    ++listed;
    s += "  " + node_name(p.node) + " (" + p.node->op_type + ") -> " + p.backend + ": " + p.reason_text() + "\n";
  }
  if (off > listed) s += "  ... " + std::to_string(off - listed) + " more off " + r.prefer[0] + "\n";
  s += "fallback ratio: " + fmt("%.1f%%", 100.0 * r.fallback_ratio_nodes) + " of nodes, " +
       fmt("%.1f%%", 100.0 * r.fallback_ratio_time) + " of estimated time\n";
  for (const std::string& w : r.warnings) s += "warning: " + w + "\n";
  return s;
}

}  // namespace nfuse::partition
