#include "backends/fusion/group_former.h"

#include <unordered_map>

#include "backends/fusion/strip_layer.h"

namespace nfuse::backends::fusion {
namespace {

// Whether `v` may stay inside a group: one consuming node, not a graph output.
bool internal_candidate(const ir::Value* v) {
  if (!v || v->is_graph_output || v->consumers.size() != 1) return false;
  return true;
}

int64_t batch_of(const TypeOf& type_of, const ir::Value* v) { return (*type_of(v).shape.static_dims())[0]; }

}  // namespace

std::vector<GroupPlan> form_groups(const std::vector<const ir::Node*>& nodes, const TypeOf& type_of) {
  std::vector<GroupPlan> groups;
  std::unordered_map<const ir::Value*, size_t> open_tail;  // a group's current output -> group
  for (const ir::Node* n : nodes) {
    const std::vector<int> candidates = row_inputs(*n);
    const bool binary = elementwise_binary(*n);
    bool joined = false;
    for (size_t k = 0; k < candidates.size() && !joined; ++k) {
      const ir::Value* v = n->input(candidates[k]);
      auto it = open_tail.find(v);
      if (it == open_tail.end() || !internal_candidate(v) || v->consumers.front() != n) continue;
      if (batch_of(type_of, v) != batch_of(type_of, n->output(0))) continue;
      const int main = main_input_index(*n, v, type_of);
      if (n->input(main) != v || type_of(v).shape != type_of(n->output(0)).shape) {
        if (binary) continue;  // the chained operand must be the full-shape one
      }
      GroupPlan& g = groups[it->second];
      g.nodes.push_back(n);
      g.main_inputs.push_back(main);
      open_tail.erase(it);
      open_tail[n->output(0)] = static_cast<size_t>(&g - groups.data());
      joined = true;
    }
    if (joined) continue;
    groups.push_back(GroupPlan{{n}, {main_input_index(*n, nullptr, type_of)}});
    open_tail[n->output(0)] = groups.size() - 1;
  }
  // In the order their last members ran.
  std::unordered_map<const ir::Node*, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  std::stable_sort(groups.begin(), groups.end(), [&](const GroupPlan& a, const GroupPlan& b) {
    return position.at(a.nodes.back()) < position.at(b.nodes.back());
  });
  return groups;
}

}  // namespace nfuse::backends::fusion
