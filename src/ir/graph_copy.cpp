#include "ir/graph_copy.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace nfuse::ir {
namespace {

Status copy_into(const Graph& src, Graph& dst, bool outer_refs_as_inputs) {
  std::unordered_map<const Value*, Value*> map;
  for (const auto& v : src.values()) {
    NFUSE_ASSIGN_OR_RETURN(Value * copy, dst.add_value(v->name, v->type));
    copy->constant = v->constant;
    copy->quant = v->quant;
    copy->is_outer_ref = v->is_outer_ref && !outer_refs_as_inputs;
    map[v.get()] = copy;
  }
  auto mapped = [&map](const std::vector<Value*>& values) {
    std::vector<Value*> out;
    out.reserve(values.size());
    for (const Value* v : values) out.push_back(v ? map.at(v) : nullptr);
    return out;
  };
  dst.inputs() = mapped(src.inputs());
  if (outer_refs_as_inputs) {
    for (const auto& v : src.values())
      if (v->is_outer_ref && !v->is_constant()) dst.inputs().push_back(map.at(v.get()));
  }
  for (const auto& n : src.nodes()) {
    Attributes attrs = n->attrs;
    for (const auto& [name, value] : n->attrs.all()) {
      const auto* sub = std::get_if<std::shared_ptr<Graph>>(&value);
      if (!sub || !*sub) continue;
      auto copy = std::make_shared<Graph>();
      NFUSE_RETURN_IF_ERROR(copy_into(**sub, *copy, false), n->label() + ": subgraph '" + name + "'");
      copy->parent = &dst;
      attrs.set(name, std::move(copy));
    }
    Node* copy = dst.add_node(n->op_type, n->name, mapped(n->inputs), mapped(n->outputs), std::move(attrs));
    copy->domain = n->domain;
    copy->opset = n->opset;
    copy->implicit_inputs = mapped(n->implicit_inputs);
  }
  dst.outputs() = mapped(src.outputs());
  dst.name = src.name;
  dst.opsets = src.opsets;
  dst.relink();
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<Graph>> copy_graph(const Graph& g, bool outer_refs_as_inputs) {
  auto copy = std::make_unique<Graph>();
  NFUSE_RETURN_IF_ERROR_PLAIN(copy_into(g, *copy, outer_refs_as_inputs));
  if (outer_refs_as_inputs) {
    const Graph* top = &g;
    while (top->parent) top = top->parent;
    for (const auto& [domain, version] : top->opsets) copy->opsets.emplace(domain, version);
  } else {
    copy->parent = g.parent;
  }
  return copy;
}

}  // namespace nfuse::ir
