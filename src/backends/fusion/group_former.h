// How the fusion backend cuts its partition into fused groups: chains in which every value
// passed from one member to the next has that member as its only consumer (and is no graph
// output), so it never needs to exist in the arena. One exception: a value that a later member
// of the same chain also reads as a residual (a MobileNet block's input, read by its expand
// conv and added back after its project conv). With only row-keeping members in between, the
// rows the residual needs are still in that value's line buffer, so it stays inside too.
// Nearest Resizes are not chained: each joins the group of the member reading it (GroupPlan).
#pragma once

#include <vector>

#include "backends/backend.h"

namespace nfuse::backends::fusion {

// Rows narrower than this (pixels) do not amortise a strip's per-call costs: the backend gives
// such groups back (fusion_backend.cpp), and skip values narrower than this are not kept, since
// chaining whole residual stages of narrow rows makes long groups whose strips shrink to fit L2.
inline constexpr size_t kMinFusedWidth = 200;

struct GroupPlan {
  std::vector<const ir::Node*> nodes;  // chain order
  std::vector<int> main_inputs;        // per node: the input carrying the previous member's rows
  // Nearest Resizes whose only consumer, a member, reads them as a full operand (not its chained
  // input): that member reads the Resize's source through its index maps instead.
  std::vector<const ir::Node*> operands;
};

// A nearest Resize: never a chain member; it joins its consumer's group as one of its operands,
// or forms a group of its own that the backend gives back.
bool operand_only(const ir::Node& node);

// Groups of `nodes` (a topological order of supported nodes) in the order of their last
// members: running each group whole at its last member's place is again a topological order
// (a member's value is consumed only inside its group). Deterministic.
std::vector<GroupPlan> form_groups(const std::vector<const ir::Node*>& nodes, const PlanView& type_of);

}  // namespace nfuse::backends::fusion
