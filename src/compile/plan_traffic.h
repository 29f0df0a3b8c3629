// Arena traffic of one inference of a plan: the bytes every step reads from and writes to the
// arena (graph inputs and outputs included, constants excluded), as executed and as running the
// same nodes layer by layer would. Backends that execute depth-first (fusion) count their own
// (CompiledPartition::traffic); every other step is layer by layer by construction and is
// counted here from the plan's tensor sizes. What `nfuse bench --traffic` prints.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "compile/plan.h"

namespace nfuse::compile {

struct StepTraffic {
  std::string backend;
  int64_t fused_bytes = 0;
  int64_t layerwise_bytes = 0;
  std::vector<backends::GroupTraffic> groups;  // empty for layer-by-layer steps
};

struct PlanTraffic {
  int64_t fused_bytes = 0;      // as the plan executes
  int64_t layerwise_bytes = 0;  // the same nodes one after another through the arena
  std::vector<StepTraffic> steps;
};

PlanTraffic plan_traffic(const Plan& plan);
// {arena_bytes_fused, arena_bytes_layerwise, fused_groups: [{label, nodes, tile_rows, fused_bytes,
// layerwise_bytes, scratch_bytes}]}
nlohmann::json plan_traffic_json(const PlanTraffic& traffic);

}  // namespace nfuse::compile
