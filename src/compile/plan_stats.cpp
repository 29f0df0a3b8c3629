#include "compile/plan_stats.h"

#include "partition/node_macs.h"

namespace nfuse::compile {

PlanStats compute_stats(const ir::Graph& graph, const Plan& plan) {
  PlanStats s;
  const backends::PlanView type_of = plan.view(graph);
  for (const auto& n : graph.nodes()) {
    ++s.op_histogram[n->op_type];
    s.macs += partition::node_macs(*n, type_of);
  }
  for (const auto& v : graph.values()) {
    if (!v->constant || !ir::dtype_is_float(v->constant->dtype())) continue;
    if (v->consumers.empty()) continue;
    s.parameters += v->constant->numel();
    s.parameter_bytes += static_cast<int64_t>(v->constant->bytes());
  }
  s.arena_bytes = plan.memory.arena_bytes;
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
