#include "backends/fusion/group_former.h"

#include <algorithm>
#include <unordered_map>

#include "backends/fusion/strip_layer.h"
#include "ops/conv_geometry.h"
#include "ops/fused_epilogue.h"

namespace nfuse::backends::fusion {
namespace {

int64_t batch_of(const PlanView& type_of, const ir::Value* v) { return (*type_of(v).shape.static_dims())[0]; }

// Whether `reader` reads `v` as a residual: a Conv's fused residual, or Add's full-shape other
// operand.
bool reads_as_residual(const ir::Node& reader, const ir::Value* v, const PlanView& type_of) {
  if (reader.op_type == "Conv" && reader.attrs.has(ops::kFusedResidualAttr) && !reader.implicit_inputs.empty() &&
      reader.implicit_inputs[0] == v)
    return std::count(reader.inputs.begin(), reader.inputs.end(), v) == 0;
  if (reader.domain.empty() && reader.op_type == "Add" && reader.num_inputs() == 2 && reader.input(0) != reader.input(1))
    return (reader.input(0) == v || reader.input(1) == v) && type_of(v).shape == type_of(reader.output(0)).shape;
  return false;
}

// Whether a member keeps its input's rows where they are: element-wise members, Concats, and
// stride-1 windows whose output has the input's height. Between a skip value and its residual
// reader only these may stand, so the rows the reader needs are still in the skip value's line
// buffer when it runs (the halo the windows in between keep is a superset of them).
bool keeps_rows(const ir::Node& n, const PlanView& type_of) {
  if (elementwise_member(n) || is_concat(n)) return true;
  if (n.op_type != "Conv" && n.op_type != "MaxPool" && n.op_type != "AveragePool") return false;
  for (int64_t s : n.attrs.get_ints("strides", {1, 1}))
    if (s != 1) return false;
  const auto in = type_of(n.input(0)).shape.static_dims(), out = type_of(n.output(0)).shape.static_dims();
  return in && out && in->size() == 4 && out->size() == 4 && (*in)[2] == (*out)[2];
}

// A value passed inside a chain that a later member also reads as a residual ("skip"): valid
// only if that reader joined the same group with nothing but row-keeping members in between.
struct Skip {
  const ir::Value* value = nullptr;
  const ir::Node* reader = nullptr;
};

}  // namespace

bool operand_only(const ir::Node& node) { return node.domain.empty() && node.op_type == "Resize"; }

std::vector<GroupPlan> form_groups(const std::vector<const ir::Node*>& nodes, const PlanView& type_of) {
  std::vector<GroupPlan> groups;
  std::vector<Skip> skips;
  std::vector<const ir::Node*> resizes;
  std::unordered_map<const ir::Value*, size_t> open_tail;  // a group's current output -> group
  for (const ir::Node* n : nodes) {
    if (operand_only(*n)) {
      resizes.push_back(n);
      continue;
    }
    const std::vector<int> candidates = row_inputs(*n);
    const bool binary = elementwise_binary(*n);
    bool joined = false;
    for (size_t k = 0; k < candidates.size() && !joined; ++k) {
      const ir::Value* v = n->input(candidates[k]);
      auto it = open_tail.find(v);
      if (it == open_tail.end() || !v || v->is_graph_output) continue;
      // Read by n alone, or by n and a later residual reader when n starts a stage of its own
      // (v is then the final content of its stage's line buffer, not rewritten in place).
      const ir::Node* skip_reader = nullptr;
      if (v->consumers.size() == 2 && !elementwise_member(*n) &&
          (*type_of(v).shape.static_dims())[3] >= static_cast<int64_t>(kMinFusedWidth)) {
        const ir::Node* other = v->consumers[0] == n ? v->consumers[1] : v->consumers[0];
        if (other != n && reads_as_residual(*other, v, type_of)) skip_reader = other;
      }
      if (v->consumers.size() != 1 && !skip_reader) continue;
      if (v->consumers.size() == 1 && v->consumers.front() != n) continue;
      if (batch_of(type_of, v) != batch_of(type_of, n->output(0))) continue;
      const int main = main_input_index(*n, v, type_of);
      if (n->input(main) != v || type_of(v).shape != type_of(n->output(0)).shape) {
        if (binary) continue;  // the chained operand must be the full-shape one
      }
      GroupPlan& g = groups[it->second];
      g.nodes.push_back(n);
      g.main_inputs.push_back(main);
      if (skip_reader) skips.push_back({v, skip_reader});
      open_tail.erase(it);
      open_tail[n->output(0)] = static_cast<size_t>(&g - groups.data());
      joined = true;
    }
    if (joined) continue;
    groups.push_back(GroupPlan{{n}, {main_input_index(*n, nullptr, type_of)}, {}});
    open_tail[n->output(0)] = groups.size() - 1;
  }
  // A skip whose reader did not join its group, or with a member in between that moves rows,
  // splits the group after the skip value's producer: the value then lives in the arena.
  for (bool split = true; split;) {
    split = false;
    for (size_t gi = 0; gi < groups.size() && !split; ++gi) {
      GroupPlan& g = groups[gi];
      for (const Skip& s : skips) {
        auto produced = std::find_if(g.nodes.begin(), g.nodes.end(),
                                     [&](const ir::Node* m) { return m->output(0) == s.value; });
        if (produced == g.nodes.end() || produced + 1 == g.nodes.end()) continue;
        auto reader = std::find(produced + 1, g.nodes.end(), s.reader);
        const bool ok = reader != g.nodes.end() &&
                        std::all_of(produced + 1, reader, [&](const ir::Node* m) { return keeps_rows(*m, type_of); });
        if (ok) continue;
        const size_t cut = static_cast<size_t>(produced - g.nodes.begin()) + 1;
        GroupPlan tail{{g.nodes.begin() + static_cast<std::ptrdiff_t>(cut), g.nodes.end()},
                       {g.main_inputs.begin() + static_cast<std::ptrdiff_t>(cut), g.main_inputs.end()},
                       {}};
        g.nodes.resize(cut);
        g.main_inputs.resize(cut);
        groups.push_back(std::move(tail));
        split = true;
        break;
      }
    }
  }
  // Each Resize joins the group of the member that reads it as a full operand (Add/Mul's other
  // operand, a Concat part), or stays alone.
  for (const ir::Node* r : resizes) {
    const ir::Value* v = r->output(0);
    bool attached = false;
    if (v && !v->is_graph_output && v->consumers.size() == 1) {
      const ir::Node* reader = v->consumers.front();
      for (GroupPlan& g : groups) {
        auto it = std::find(g.nodes.begin(), g.nodes.end(), reader);
        if (it == g.nodes.end()) continue;
        const size_t k = static_cast<size_t>(it - g.nodes.begin());
        const bool once = std::count(reader->inputs.begin(), reader->inputs.end(), v) == 1;
        const bool full = elementwise_binary(*reader) ? type_of(v).shape == type_of(reader->output(0)).shape
                                                      : is_concat(*reader);
        const bool operand = reader->input(g.main_inputs[k]) != v && once && full;
        if (operand) {
          g.operands.push_back(r);
          attached = true;
        }
        break;
      }
    }
    if (!attached) groups.push_back(GroupPlan{{r}, {0}, {}});
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
