#include "passes/fold_constants.h"

#include <algorithm>
#include <set>
#include <string>

#include "ir/op_registry.h"

namespace nfuse::passes {
namespace {

// Ops whose result must not be computed once: random generators, and the QDQ ops, whose
// quantized weights the quantization flow and int8 backends read as such.
const std::set<std::string>& never_folded() {
  static const std::set<std::string> ops = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"};
  return ops;
}

bool has_subgraph(const ir::Node& n) {
  for (const auto& [name, attr] : n.attrs.all())
    if (std::holds_alternative<std::shared_ptr<ir::Graph>>(attr)) return true;
  return false;
}

bool foldable(const ir::Node& n, bool fold_dequantize) {
  const bool dequantize = fold_dequantize && n.op_type == "DequantizeLinear" && n.domain.empty();
  if ((never_folded().count(n.op_type) && !dequantize) || has_subgraph(n) || !n.implicit_inputs.empty()) return false;
  // A graph output keeps its producer: outputs stay computed values, never initializers.
  for (const ir::Value* v : n.outputs)
    if (v && v->is_graph_output) return false;
  return true;
}

// Output values the schema computes from types alone (Shape, Size of static shapes; Constant).
std::optional<std::vector<ir::Tensor>> inferred_values(const ir::Node& n) {
  std::vector<ir::TensorType> types;
  std::vector<ir::Tensor> values;
  if (!ir::infer_node(n, {}, &types, &values).ok()) return std::nullopt;
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] && (i >= values.size() || values[i].empty())) return std::nullopt;
  return values;
}

// Evaluates a node whose inputs are all constants, within the size cap.
std::optional<std::vector<ir::Tensor>> evaluated_values(const ir::Node& n, const FoldConstantsOptions& opt) {
  if (!opt.evaluator) return std::nullopt;
  std::vector<const ir::Tensor*> inputs;
  int64_t input_elements = 0;
  for (const ir::Value* v : n.inputs) {
    if (v && !v->constant) return std::nullopt;
    inputs.push_back(v ? &*v->constant : nullptr);
    if (v) input_elements += v->constant->numel();
  }
  const int64_t cap = std::max(opt.max_elements, input_elements);
  // The recorded types bound the size before any work where they are static.
  for (const ir::Value* v : n.outputs) {
    if (!v) continue;
    auto numel = v->type.shape.static_numel();
    if (numel && *numel > cap) return std::nullopt;
  }
  auto outs = opt.evaluator(n, inputs);
  if (!outs.ok() || outs->size() != n.outputs.size()) return std::nullopt;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (!n.outputs[i]) continue;
    if ((*outs)[i].empty() || (*outs)[i].numel() > cap) return std::nullopt;
  }
  return std::move(outs).value();
}

}  // namespace

// Pattern: op(c1, c2, ...) with every input constant  ->  constant outputs
//          Shape(x) / Size(x) with x of static shape   ->  constant
Status fold_constants(ir::Graph& graph, const FoldConstantsOptions& options, PassLog& log) {
  graph.relink();
  bool changed = false;
  for (const auto& node_ptr : graph.nodes()) {
    ir::Node& n = *node_ptr;
    if (!foldable(n, options.fold_dequantize)) continue;
    auto values = inferred_values(n);
    if (!values) values = evaluated_values(n, options);
    if (!values) continue;
    std::string what;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ir::Value* v = n.outputs[i];
      if (!v) continue;
      ir::Tensor& t = (*values)[i];
      v->type = ir::TensorType{t.dtype(), ir::Shape::from_dims(t.dims())};
      v->constant = std::move(t);
      what += (what.empty() ? "'" : ", '") + v->name + "' " + v->type.to_string();
    }
    log.add("folded " + n.label() + " into constant " + what);
    graph.remove_node(&n);
    changed = true;
  }
  if (changed) graph.compact();
  return ok_status();
}

}  // namespace nfuse::passes
