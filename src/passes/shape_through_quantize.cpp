#include "passes/shape_through_quantize.h"

namespace nfuse::passes {

Status shape_through_quantize(ir::Graph& graph, PassLog& log) {
  bool changed = false;
  for (const auto& up : graph.nodes()) {
    ir::Node& n = *up;
    if (!n.domain.empty() || (n.op_type != "Shape" && n.op_type != "Size") || !n.input(0)) continue;
    ir::Value* x = n.input(0);
    if (x->type.dtype != ir::DType::kF32) continue;
    ir::Value* q = nullptr;
    for (ir::Node* c : x->consumers) {
      if (c->domain.empty() && c->op_type == "QuantizeLinear" && c->input(0) == x && c->num_outputs() == 1) {
        q = c->output(0);
        break;
      }
    }
    if (!q) continue;
    n.inputs[0] = q;
    changed = true;
    log.add(n.label() + " reads '" + q->name + "' (the quantized '" + x->name + "', same shape)");
  }
  if (changed) graph.relink();
  return ok_status();
}

}  // namespace nfuse::passes
