#include "ir/infer_shapes.h"

#include "ir/op_registry.h"

namespace nfuse::ir {
namespace {

// Combines a declared and an inferred type; fails on contradictions.
Status merge_type(const ir::Node& node, ir::Value& v, const ir::TensorType& inferred) {
  ir::TensorType& t = v.type;
  auto conflict = [&](const std::string& why) {
    return invalid_model(node.label() + ": output '" + v.name + "' is declared " + t.to_string() +
                         " but the op produces " + inferred.to_string() + " (" + why + ")");
  };
  if (inferred.dtype != ir::DType::kUndefined) {
    if (t.dtype != ir::DType::kUndefined && t.dtype != inferred.dtype) return conflict("dtype mismatch");
    t.dtype = inferred.dtype;
  }
  if (!inferred.shape.rank_known()) return ok_status();
  if (!t.shape.rank_known()) {
    t.shape = inferred.shape;
    return ok_status();
  }
  if (t.shape.rank() != inferred.shape.rank()) return conflict("rank mismatch");
  for (int i = 0; i < t.shape.rank(); ++i) {
    ir::Dim& d = t.shape[i];
    const ir::Dim& e = inferred.shape[i];
    if (d.is_static() && e.is_static() && d.value != e.value) return conflict("dim " + std::to_string(i) + " mismatch");
    if (!d.is_static() && (e.is_static() || !e.symbol.empty())) d = e;
  }
  return ok_status();
}

// Loop bodies may leave their inputs untyped: (iteration i64 scalar, cond bool scalar, carried
// values...). Carried values take their initial value's dtype; their shape may change between
// iterations, so it stays unknown.
void type_loop_body_inputs(const ir::Node& loop, ir::Graph& body) {
  auto& ins = body.inputs();
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i]->type.dtype != ir::DType::kUndefined) continue;
    if (i == 0)
      ins[i]->type = {ir::DType::kI64, ir::Shape(std::vector<ir::Dim>{})};
    else if (i == 1)
      ins[i]->type = {ir::DType::kBool, ir::Shape(std::vector<ir::Dim>{})};
    else if (loop.has_input(static_cast<int>(i)))
      ins[i]->type = {loop.input(static_cast<int>(i))->type.dtype, ir::Shape::unknown_rank()};
  }
}

}  // namespace

Status infer_shapes(ir::Graph& graph) {
  for (const auto& node : graph.nodes()) {
    for (const auto& [name, attr] : node->attrs.all()) {
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr)) {
        // Outer references carry the types of their outer values, which may be refined by now.
        for (const auto& v : (*sub)->values()) {
          if (!v->is_outer_ref) continue;
          for (const ir::Value* outer : node->implicit_inputs)
            if (outer->name == v->name) v->type = outer->type;
        }
        if (node->op_type == "Loop" && name == "body") type_loop_body_inputs(*node, **sub);
        NFUSE_RETURN_IF_ERROR(infer_shapes(**sub), node->label() + ": subgraph '" + name + "'");
      }
    }
    std::vector<ir::TensorType> types;
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(*node, {}, &types));
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      if (node->outputs[i]) NFUSE_RETURN_IF_ERROR_PLAIN(merge_type(*node, *node->outputs[i], types[i]));
    }
  }
  return ok_status();
}

}  // namespace nfuse::ir
