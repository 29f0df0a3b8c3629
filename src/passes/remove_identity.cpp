#include "passes/remove_identity.h"

#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// Dropout in inference: training_mode (opset 12+) absent or a constant false, and the mask
// output unused. Older opsets' is_test attribute does not matter: nfuse only runs inference.
bool is_inference_dropout(const ir::Node& n) {
  if (n.op_type != "Dropout") return false;
  if (const ir::Value* mode = n.input(2)) {
    if (!mode->constant || mode->constant->numel() != 1 || mode->constant->get_double(0) != 0) return false;
  }
  if (n.num_outputs() > 1 && n.output(1)) {
    const ir::Value* mask = n.output(1);
    if (!mask->consumers.empty() || mask->is_graph_output) return false;
  }
  return true;
}

// Pattern: x -> Identity -> y            ->  consumers of y read x
//          x -> Dropout(inference) -> y  ->  consumers of y read x
//          P -> x -> Identity -> y (graph output)  ->  P -> y, consumers of x read y
bool try_remove(ir::Graph& graph, ir::Node& n, PassLog& log) {
  if (!n.domain.empty() || (n.op_type != "Identity" && !is_inference_dropout(n))) return false;
  ir::Value* x = n.input(0);
  ir::Value* y = n.output(0);
  if (!x || !y) return false;
  if (!y->is_graph_output) {
    graph.replace_all_uses(y, x);
    log.add("removed " + n.label() + ": consumers of '" + y->name + "' read '" + x->name + "'");
  } else {
    // y must keep its name: move the definition of x onto y.
    if (!x->producer || x->is_graph_output || x->is_graph_input || x->is_constant()) return false;
    ir::Node* p = x->producer;
    graph.remove_node(&n);
    n.inputs.clear();  // so that replacing x below cannot make the dead node read y
    p->outputs[static_cast<size_t>(x->producer_output)] = y;
    graph.replace_all_uses(x, y);
    if (!y->type.shape.rank_known()) y->type.shape = x->type.shape;
    if (y->type.dtype == ir::DType::kUndefined) y->type.dtype = x->type.dtype;
    if (y->quant.empty()) y->quant = x->quant;
    n.outputs.clear();
    log.add("removed " + n.label() + ": " + p->label() + " now writes graph output '" + y->name + "' (was '" +
            x->name + "')");
    return true;
  }
  graph.remove_node(&n);
  return true;
}

}  // namespace

Status remove_identity(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) -> Result<bool> { return try_remove(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
