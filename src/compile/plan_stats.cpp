#include "compile/plan_stats.h"

namespace nfuse::compile {
namespace {

const ir::TensorType* type_of(const Plan& plan, const ir::Value* v) {
  if (!v) return nullptr;
  auto it = plan.slot_of.find(v);
  return it == plan.slot_of.end() ? &v->type : &plan.values[static_cast<size_t>(it->second)].type;
}

int64_t numel_of(const ir::TensorType* t) {
  if (!t) return 0;
  auto n = t->shape.static_numel();
  return n ? *n : 0;
}

// MACs of one node; 0 for ops whose cost is not multiply-accumulate dominated.
int64_t node_macs(const Plan& plan, const ir::Node& n) {
  const ir::TensorType* in = type_of(plan, n.input(0));
  const ir::TensorType* w = type_of(plan, n.input(1));
  const ir::TensorType* out = n.outputs.empty() ? nullptr : type_of(plan, n.output(0));
  if (!in || !out) return 0;
  if (n.op_type == "Conv" && w && w->shape.is_static() && w->shape.rank() >= 2) {
    // Each output element takes Cin/group * prod(kernel) MACs; W is [Cout, Cin/group, k...].
    int64_t per_output = 1;
    for (int i = 1; i < w->shape.rank(); ++i) per_output *= w->shape[i].value;
    return numel_of(out) * per_output;
  }
  if (n.op_type == "ConvTranspose" && w && w->shape.is_static() && w->shape.rank() >= 2) {
    // Each input element scatters into Cout/group * prod(kernel) outputs; W is [Cin, Cout/group, k...].
    int64_t per_input = 1;
    for (int i = 1; i < w->shape.rank(); ++i) per_input *= w->shape[i].value;
    return numel_of(in) * per_input;
  }
  if ((n.op_type == "MatMul" || n.op_type == "Gemm") && w && w->shape.is_static() && w->shape.rank() >= 1) {
    // out = [.., M, N]; K is the reduced dim of the first operand.
    const ir::TensorType* a = in;
    if (!a->shape.is_static() || a->shape.rank() == 0) return 0;
    int64_t k = a->shape[a->shape.rank() - 1].value;
    if (n.op_type == "Gemm" && n.attrs.get_int("transA", 0)) k = a->shape[0].value;
    return numel_of(out) * k;
  }
  if (n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN") {
    // W [dirs, gates*H, I], R [dirs, gates*H, H]: every step multiplies x by W and h by R.
    const ir::TensorType* r = type_of(plan, n.input(2));
    if (!w || !r || !in->shape.is_static() || !w->shape.is_static() || !r->shape.is_static()) return 0;
    const int64_t steps = in->shape[n.attrs.get_int("layout", 0) ? 1 : 0].value;
    const int64_t batch = in->shape[n.attrs.get_int("layout", 0) ? 0 : 1].value;
    return steps * batch * (numel_of(w) + numel_of(r));
  }
  return 0;
}

}  // namespace

PlanStats compute_stats(const ir::Graph& graph, const Plan& plan) {
  PlanStats s;
  for (const auto& n : graph.nodes()) {
    ++s.op_histogram[n->op_type];
    s.macs += node_macs(plan, *n);
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
    if (st.partition.backend == "ref") continue;  // ref's kernels are its own
    for (std::string& label : st.compiled->reference_nodes()) s.reference_nodes.push_back(std::move(label));
  }
  s.folded_nodes = plan.folded_nodes;
  return s;
}

}  // namespace nfuse::compile
