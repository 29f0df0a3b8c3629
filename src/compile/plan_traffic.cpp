#include "compile/plan_traffic.h"

namespace nfuse::compile {
namespace {

// Bytes a layer-by-layer node moves: every non-constant input it reads (implicit ones such as a
// fused residual included) and every output it writes, at the plan's concrete sizes; none for a
// Reshape-like node whose input and output the plan gave one buffer (it copies nothing).
int64_t node_bytes(const Plan& plan, const ir::Node& node) {
  auto offset = [&](const ir::Value* v) -> int64_t {
    auto it = v ? plan.slot_of.find(v) : plan.slot_of.end();
    return it == plan.slot_of.end() ? -1 : plan.values[static_cast<size_t>(it->second)].arena_offset;
  };
  if (node.outputs.size() == 1 && !node.inputs.empty() && offset(node.input(0)) >= 0 &&
      offset(node.input(0)) == offset(node.output(0)))
    return 0;
  auto bytes = [&](const ir::Value* v) -> int64_t {
    if (!v) return 0;
    auto it = plan.slot_of.find(v);
    if (it == plan.slot_of.end()) return 0;
    const PlannedValue& pv = plan.values[static_cast<size_t>(it->second)];
    if (pv.known_value) return 0;  // a constant or folded value: weights, not activations
    auto n = pv.type.shape.static_numel();
    return n ? *n * static_cast<int64_t>(ir::dtype_size(pv.type.dtype)) : 0;
  };
  int64_t total = 0;
  for (const ir::Value* v : node.inputs) total += bytes(v);
  for (const ir::Value* v : node.implicit_inputs) total += bytes(v);
  for (const ir::Value* v : node.outputs) total += bytes(v);
  return total;
}

}  // namespace

PlanTraffic plan_traffic(const Plan& plan) {
  PlanTraffic t;
  for (const Step& step : plan.steps) {
    StepTraffic s;
    s.backend = step.partition.backend;
    backends::PartitionTraffic counted = step.compiled ? step.compiled->traffic() : backends::PartitionTraffic{};
    if (counted.known) {
      s.fused_bytes = counted.fused_bytes;
      s.layerwise_bytes = counted.layerwise_bytes;
      s.groups = std::move(counted.groups);
    } else {
      for (const ir::Node* n : step.partition.nodes) s.layerwise_bytes += node_bytes(plan, *n);
      s.fused_bytes = s.layerwise_bytes;
    }
    t.fused_bytes += s.fused_bytes;
    t.layerwise_bytes += s.layerwise_bytes;
    t.steps.push_back(std::move(s));
  }
  return t;
}

nlohmann::json plan_traffic_json(const PlanTraffic& traffic) {
  nlohmann::json groups = nlohmann::json::array();
  for (const StepTraffic& st : traffic.steps)
    for (const backends::GroupTraffic& g : st.groups)
      groups.push_back({{"label", g.label},
                        {"nodes", g.nodes},
                        {"tile_rows", g.tile_rows},
                        {"fused_bytes", g.fused_bytes},
                        {"layerwise_bytes", g.layerwise_bytes},
                        {"scratch_bytes", g.scratch_bytes}});
  return {{"arena_bytes_fused", traffic.fused_bytes},
          {"arena_bytes_layerwise", traffic.layerwise_bytes},
          {"fused_groups", groups}};
}

}  // namespace nfuse::compile
