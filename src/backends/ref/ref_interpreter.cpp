#include <cstring>
#include <unordered_map>

#include "backends/ref/interpreter.h"
#include "backends/ref/ref_fused_epilogue.h"
#include "backends/ref/ref_kernel.h"
#include "ir/op_registry.h"

namespace nfuse::backends::ref {

void poison(ir::Tensor& t) {
  if (t.bytes()) std::memset(t.raw(), 0xFF, t.bytes());
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

bool KernelRegistry::add(const std::string& op_type, KernelFn fn) {
  kernels_[op_type] = fn;
  return true;
}

KernelFn KernelRegistry::find(const std::string& op_type) const {
  auto it = kernels_.find(op_type);
  return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [op, fn] : kernels_) out.push_back(op);
  return out;
}

namespace {

Result<std::vector<ir::Tensor>> interpret_body(const ir::Node&, const ir::Graph& body,
                                               const std::vector<ir::Tensor>& inputs, const OuterLookup& outer,
                                               RunProfile*) {
  return interpret_graph(body, inputs, outer);
}

}  // namespace

Result<std::vector<ir::Tensor>> KernelArgs::run_body(const ir::Graph& body,
                                                     const std::vector<ir::Tensor>& body_inputs) const {
  if (!run_subgraph) return error("no subgraph runner was provided");
  const OuterLookup outer = [this](const std::string& name) -> const ir::Tensor* {
    for (size_t i = 0; i < node.implicit_inputs.size() && i < implicit_inputs.size(); ++i) {
      if (node.implicit_inputs[i] && node.implicit_inputs[i]->name == name) return implicit_inputs[i];
    }
    return nullptr;
  };
  return (*run_subgraph)(node, body, body_inputs, outer, profile);
}

Status run_reference_kernel(KernelFn fn, KernelArgs& args) {
  static const SubgraphRunner runner = interpret_body;
  if (!args.run_subgraph) args.run_subgraph = &runner;
  NFUSE_RETURN_IF_ERROR_PLAIN(fn(args));
  return apply_fused_epilogue(args);
}

const NodeEvaluatorFn& node_evaluator() {
  static const NodeEvaluatorFn evaluator = [](const ir::Node& node, const std::vector<const ir::Tensor*>& inputs) {
    return evaluate_node(node, inputs);
  };
  return evaluator;
}

Result<std::vector<ir::Tensor>> evaluate_node(const ir::Node& node,
                                              const std::vector<const ir::Tensor*>& inputs,
                                              const std::vector<const ir::Tensor*>& implicit_inputs) {
  KernelFn fn = KernelRegistry::global().find(node.op_type);
  if (!fn) return unsupported(node.label() + ": the ref backend has no kernel for this op");
  const ir::OpSchema* schema = ir::OpRegistry::global().find(node.op_type, node.domain);
  const bool kernel_allocates = schema && schema->kernel_allocates_outputs;
  std::vector<ir::TensorType> types;
  if (!kernel_allocates) NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(node, inputs, &types, nullptr, {}, implicit_inputs));
  std::vector<ir::Tensor> outs(node.outputs.size());
  for (size_t i = 0; i < types.size(); ++i) {
    if (!node.outputs[i]) continue;
    auto dims = types[i].shape.static_dims();
    if (!dims) {
      return internal_error(node.label() + ": output " + std::to_string(i) +
                            " shape is unknown even with all inputs known: " + types[i].to_string());
    }
    NFUSE_ASSIGN_OR_RETURN(outs[i], ir::Tensor::try_allocate(types[i].dtype, *dims));
    poison(outs[i]);
  }
  KernelArgs args{node, inputs, {}, implicit_inputs, nullptr};
  for (auto& t : outs) args.outputs.push_back(&t);
  NFUSE_RETURN_IF_ERROR_PLAIN(run_reference_kernel(fn, args));
  return outs;
}

Result<std::vector<ir::Tensor>> interpret_graph(
    const ir::Graph& graph, const std::vector<ir::Tensor>& inputs,
    const std::function<const ir::Tensor*(const std::string&)>& outer) {
  if (inputs.size() != graph.inputs().size()) {
    return invalid_argument("graph '" + graph.name + "' takes " +
                            std::to_string(graph.inputs().size()) + " inputs, got " +
                            std::to_string(inputs.size()));
  }
  std::unordered_map<const ir::Value*, ir::Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[graph.inputs()[i]] = inputs[i];
  auto lookup = [&](const ir::Value* v) -> const ir::Tensor* {
    if (!v) return nullptr;
    if (v->constant) return &*v->constant;
    auto it = env.find(v);
    if (it != env.end()) return &it->second;
    if (outer) return outer(v->name);
    return nullptr;
  };
  for (const auto& node : graph.nodes()) {
    std::vector<const ir::Tensor*> ins;
    for (const ir::Value* v : node->inputs) {
      const ir::Tensor* t = lookup(v);
      if (v && !t) return invalid_model(node->label() + ": input '" + v->name + "' has no value");
      ins.push_back(t);
    }
    std::vector<const ir::Tensor*> implicit;
    for (const ir::Value* v : node->implicit_inputs) {
      const ir::Tensor* t = lookup(v);
      if (!t) return invalid_model(node->label() + ": outer value '" + v->name + "' has no value");
      implicit.push_back(t);
    }
    NFUSE_ASSIGN_OR_RETURN(auto outs, evaluate_node(*node, ins, implicit));
    for (size_t i = 0; i < outs.size(); ++i)
      if (node->outputs[i]) env[node->outputs[i]] = std::move(outs[i]);
  }
  std::vector<ir::Tensor> result;
  for (const ir::Value* v : graph.outputs()) {
    const ir::Tensor* t = lookup(v);
    if (!t) return invalid_model("graph output '" + v->name + "' has no value");
    result.push_back(*t);
  }
  return result;
}

}  // namespace nfuse::backends::ref
