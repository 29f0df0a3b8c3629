#include "ops/subgraph_infer.h"

#include <string>
#include <unordered_map>

namespace nfuse::ops {
namespace {

// What inference knows of a value inside a subgraph: its type and, for constants and cheap
// shape-like results, its value.
struct Known {
  ir::TensorType type;
  const ir::Tensor* value = nullptr;
  ir::Tensor owned;  // holds values computed by infer (Shape, Size)
};

const ir::Value* outer_value(const ir::Node& node, const std::string& name) {
  for (const ir::Value* v : node.implicit_inputs)
    if (v && v->name == name) return v;
  return nullptr;
}

// Prefers what inference computed; keeps the subgraph's declared dims where inference knows less.
ir::TensorType merge_declared(const ir::TensorType& inferred, const ir::TensorType& declared) {
  ir::TensorType t = inferred;
  if (t.dtype == ir::DType::kUndefined) t.dtype = declared.dtype;
  if (!t.shape.rank_known()) return {t.dtype, declared.shape};
  if (declared.shape.rank_known() && declared.shape.rank() == t.shape.rank()) {
    for (int i = 0; i < t.shape.rank(); ++i)
      if (!t.shape[i].is_static() && declared.shape[i].is_static()) t.shape[i] = declared.shape[i];
  }
  return t;
}

}  // namespace

Result<std::vector<ir::TensorType>> infer_subgraph(const ir::Node& node, const ir::Graph& g,
                                                   const std::vector<ir::TensorType>& input_types) {
  if (!input_types.empty() && input_types.size() != g.inputs().size()) {
    return invalid_model(node.label() + ": subgraph '" + g.name + "' takes " + std::to_string(g.inputs().size()) +
                         " inputs, got " + std::to_string(input_types.size()));
  }
  std::unordered_map<const ir::Value*, Known> known;
  for (size_t i = 0; i < input_types.size(); ++i) known[g.inputs()[i]].type = input_types[i];
  auto lookup = [&](const ir::Value* v) -> const Known* {
    auto it = known.find(v);
    if (it != known.end()) return &it->second;
    Known k;
    const ir::Value* src = v;
    if (!v->constant && !v->producer) {
      if (const ir::Value* outer = outer_value(node, v->name)) src = outer;
    }
    k.type = src->type;
    if (src->constant) {
      k.value = &*src->constant;
      k.type = {src->constant->dtype(), ir::Shape::from_dims(src->constant->dims())};
    }
    return &known.emplace(v, std::move(k)).first->second;
  };
  for (const auto& n : g.nodes()) {
    std::vector<const ir::Tensor*> values;
    std::vector<const ir::TensorType*> types;
    for (const ir::Value* v : n->inputs) {
      const Known* k = v ? lookup(v) : nullptr;
      values.push_back(k ? k->value : nullptr);
      types.push_back(k ? &k->type : nullptr);
    }
    std::vector<ir::TensorType> out_types;
    std::vector<ir::Tensor> out_values;
    NFUSE_RETURN_IF_ERROR(ir::infer_node(*n, values, &out_types, &out_values, types), "subgraph '" + g.name + "'");
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const ir::Value* v = n->outputs[i];
      if (!v) continue;
      Known k;
      k.type = merge_declared(out_types[i], v->type);
      if (i < out_values.size() && !out_values[i].empty()) k.owned = out_values[i];
      auto& slot = known[v] = std::move(k);
      if (!slot.owned.empty()) slot.value = &slot.owned;
    }
  }
  std::vector<ir::TensorType> result;
  for (const ir::Value* v : g.outputs()) result.push_back(lookup(v)->type);
  return result;
}

}  // namespace nfuse::ops
