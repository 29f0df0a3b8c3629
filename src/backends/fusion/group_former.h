// How the fusion backend cuts its partition into fused groups: chains in which every value
// passed from one member to the next has that member as its only consumer (and is no graph
// output), so it never needs to exist in the arena.
#pragma once

#include <vector>

#include "backends/backend.h"

namespace nfuse::backends::fusion {

struct GroupPlan {
  std::vector<const ir::Node*> nodes;  // chain order
  std::vector<int> main_inputs;        // per node: the input carrying the previous member's rows
};

// Groups of `nodes` (a topological order of supported nodes) in the order of their last
// members: running each group whole at its last member's place is again a topological order
// (a member's value is consumed only inside its group). Deterministic.
std::vector<GroupPlan> form_groups(const std::vector<const ir::Node*>& nodes, const TypeOf& type_of);

}  // namespace nfuse::backends::fusion
