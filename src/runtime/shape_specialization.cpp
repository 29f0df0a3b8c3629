#include "runtime/shape_specialization.h"

#include "backends/ref/interpreter.h"
#include "ir/graph_copy.h"
#include "ir/infer_shapes.h"

namespace nfuse::runtime {
namespace {

std::vector<std::string> names_of(const std::vector<ir::Value*>& values) {
  std::vector<std::string> names;
  for (const ir::Value* v : values) names.push_back(v ? v->name : "");
  return names;
}

bool is_if(const ir::Node& n) { return n.op_type == "If" && n.domain.empty() && !n.outputs.empty(); }

}  // namespace

bool has_top_level_if(const ir::Graph& graph) {
  for (const auto& n : graph.nodes())
    if (is_if(*n)) return true;
  return false;
}

bool plan_decides_an_if(const ir::Graph& graph, const compile::Plan& plan) {
  auto known = [&](const ir::Value* v) {
    auto it = v ? plan.slot_of.find(v) : plan.slot_of.end();
    return it != plan.slot_of.end() && plan.values[static_cast<size_t>(it->second)].known_value;
  };
  for (const auto& n : graph.nodes()) {
    if (is_if(*n) && known(n->input(0)) && !known(n->outputs[0])) return true;
  }
  return false;
}

Result<std::unique_ptr<ir::Graph>> specialize_to_shapes(const ir::Graph& graph,
                                                        const std::map<std::string, std::vector<int64_t>>& input_dims,
                                                        passes::PassReport* report) {
  NFUSE_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> copy, ir::copy_graph(graph, false));
  for (ir::Value* in : copy->inputs()) {
    auto it = input_dims.find(in->name);
    if (it == input_dims.end()) return internal_error("specializing: no dims for input '" + in->name + "'");
    in->type.shape = ir::Shape::from_dims(it->second);
  }
  NFUSE_RETURN_IF_ERROR(ir::infer_shapes(*copy), "specializing '" + graph.name + "' to its input shapes");
  passes::OptimizeOptions po;
  po.evaluator = backends::ref::node_evaluator();
  NFUSE_ASSIGN_OR_RETURN(*report, passes::optimize(*copy, po));
  if (names_of(copy->inputs()) != names_of(graph.inputs()) || names_of(copy->outputs()) != names_of(graph.outputs())) {
    return internal_error("specializing '" + graph.name + "' changed its inputs or outputs");
  }
  return copy;
}

}  // namespace nfuse::runtime
