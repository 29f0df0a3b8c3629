#include "compile/plan_stats.h"

#include <algorithm>
#include <optional>

#include "partition/node_macs.h"

namespace nfuse::compile {

namespace {

// A node's subgraphs, by attribute name.
const ir::Graph* subgraph(const ir::Node& n, const char* attr) { return n.attrs.get_graph(attr).get(); }

// A scalar int64 constant (a Loop's trip count), or nullopt.
std::optional<int64_t> constant_scalar(const ir::Value* v) {
  if (!v || !v->constant || v->constant->dtype() != ir::DType::kI64 || v->constant->numel() != 1) return std::nullopt;
  return v->constant->data<int64_t>()[0];
}

int64_t graph_macs(const ir::Graph& g, const backends::PlanView& type_of, bool* lower_bound);

// MACs of one execution of `n`, its subgraphs included.
int64_t node_macs_with_bodies(const ir::Node& n, const backends::PlanView& type_of, bool* lower_bound) {
  if (n.op_type == "If") {
    int64_t most = 0;
    for (const char* branch : {"then_branch", "else_branch"})
      if (const ir::Graph* b = subgraph(n, branch))
        most = std::max(most, graph_macs(*b, backends::PlanView(*b), lower_bound));
    return most;
  }
  if (n.op_type == "Loop" || n.op_type == "Scan") {
    const ir::Graph* body = subgraph(n, "body");
    if (!body) return 0;
    const int64_t once = graph_macs(*body, backends::PlanView(*body), lower_bound);
    std::optional<int64_t> trips;
    if (n.op_type == "Loop") {
      trips = constant_scalar(n.input(0));
    } else if (const ir::Value* scanned = n.input(static_cast<int>(n.inputs.size()) - 1)) {
      // The sequence length of the last scan input: its axis 0 unless scan_input_axes says
      // otherwise (all scan inputs share the length).
      const ir::Shape& s = type_of(scanned).shape;
      const auto axes = n.attrs.get_ints("scan_input_axes", {});
      int64_t axis = axes.empty() ? 0 : axes.back();
      if (s.rank_known() && axis < 0) axis += s.rank();
      if (s.rank_known() && axis >= 0 && axis < s.rank() && s[axis].is_static()) trips = s[axis].value;
    }
    if (!trips) *lower_bound = true;
    return once * std::max<int64_t>(trips.value_or(1), 0);
  }
  const int64_t macs = partition::node_macs(n, type_of);
  if (macs == 0 && partition::is_mac_op(n)) *lower_bound = true;
  return macs;
}

int64_t graph_macs(const ir::Graph& g, const backends::PlanView& type_of, bool* lower_bound) {
  int64_t total = 0;
  for (const auto& n : g.nodes()) total += node_macs_with_bodies(*n, type_of, lower_bound);
  return total;
}

void count_parameters(const ir::Graph& g, PlanStats& s) {
  for (const auto& v : g.values()) {
    if (!v->constant || v->consumers.empty()) continue;
    const int64_t elements = v->constant->numel(), bytes = static_cast<int64_t>(v->constant->bytes());
    s.parameters += elements;
    s.parameter_bytes += bytes;
    ParameterCount& c = s.parameters_by_dtype[std::string(ir::dtype_name(v->constant->dtype()))];
    c.elements += elements;
    c.bytes += bytes;
  }
  for (const auto& n : g.nodes())
    for (const auto& [name, attr] : n->attrs.all())
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr); sub && *sub) count_parameters(**sub, s);
}

}  // namespace

PlanStats compute_stats(const ir::Graph& graph, const Plan& plan) {
  PlanStats s;
  const backends::PlanView type_of = plan.view(graph);
  for (const auto& n : graph.nodes()) ++s.op_histogram[n->op_type];
  s.macs = graph_macs(graph, type_of, &s.macs_lower_bound);
  count_parameters(graph, s);
  s.arena_bytes = plan.memory.arena_bytes;
  s.tensor_arena_bytes = plan.tensor_arena_bytes;
  s.scratch_bytes = plan.scratch_bytes;
  s.arena_naive_bytes = plan.memory.naive_bytes;
  for (const Step& st : plan.steps) {
    s.runtime_nodes += static_cast<int>(st.partition.nodes.size());
    auto traits = backends::BackendRegistry::global().traits(st.partition.backend);
    if (traits.ok() && traits->is_reference) continue;  // the reference's kernels are its own
    for (std::string& label : st.compiled->reference_nodes()) s.reference_nodes.push_back(std::move(label));
  }
  s.folded_nodes = plan.folded_nodes;
  return s;
}

}  // namespace nfuse::compile
