#include "passes/fold_constant_if.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool has_subgraph(const ir::Node& n) {
  for (const auto& [name, attr] : n.attrs.all())
    if (std::holds_alternative<std::shared_ptr<ir::Graph>>(attr)) return true;
  return false;
}

Result<bool> try_fold(ir::Graph& graph, ir::Node& n, PassLog& log) {
  if (n.op_type != "If" || !n.domain.empty()) return false;
  const ir::Value* cond = n.input(0);
  if (!cond || !cond->constant || cond->constant->numel() != 1) return false;
  const bool taken = cond->constant->get_double(0) != 0.0;
  const std::shared_ptr<ir::Graph> branch = n.attrs.get_graph(taken ? "then_branch" : "else_branch");
  if (!branch || branch->outputs().size() != n.outputs.size()) return false;
  for (const auto& b : branch->nodes())
    if (has_subgraph(*b)) return false;

  // Branch outputs produced by a branch node take over the If's output values (first use).
  std::unordered_map<const ir::Value*, ir::Value*> outputs;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const ir::Value* bo = branch->outputs()[i];
    if (bo && bo->producer && n.outputs[i] && !outputs.count(bo)) outputs.emplace(bo, n.outputs[i]);
  }
  std::unordered_map<const ir::Value*, ir::Value*> map;
  auto resolve = [&](const ir::Value* v) -> Result<ir::Value*> {
    if (!v) return static_cast<ir::Value*>(nullptr);
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    ir::Value* out = nullptr;
    if (v->constant) {
      out = add_constant(graph, v->name, *v->constant);
    } else if (v->is_outer_ref) {
      out = graph.find_value(v->name);
    }
    if (!out) return internal_error(n.label() + ": branch value '" + v->name + "' has no producer and no outer value");
    map.emplace(v, out);
    return out;
  };
  std::vector<ir::Value*> if_outputs = n.outputs;
  const std::string label = n.label();
  const std::string prefix = n.name + "/";
  graph.remove_node(&n);
  std::unordered_set<const ir::Value*> claimed;
  for (const auto& b : branch->nodes()) {
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : b->inputs) {
      NFUSE_ASSIGN_OR_RETURN(ir::Value * r, resolve(v));
      ins.push_back(r);
    }
    std::vector<ir::Value*> outs;
    for (const ir::Value* o : b->outputs) {
      if (!o) {
        outs.push_back(nullptr);
        continue;
      }
      auto it = outputs.find(o);
      ir::Value* target = nullptr;
      if (it != outputs.end()) {
        target = it->second;
        claimed.insert(o);
      } else {
        target = graph.add_unique_value(prefix + o->name, o->type);
      }
      map.emplace(o, target);
      outs.push_back(target);
    }
    ir::Node* copy = graph.add_node(b->op_type, prefix + b->name, std::move(ins), std::move(outs), b->attrs);
    copy->domain = b->domain;
    copy->opset = b->opset;
    for (const ir::Value* v : b->implicit_inputs) {
      NFUSE_ASSIGN_OR_RETURN(ir::Value * r, resolve(v));
      copy->implicit_inputs.push_back(r);
    }
  }
  // Outputs no branch node produced for the If (an outer value, a constant, or one branch value
  // returned twice): an Identity hands them over.
  for (size_t i = 0; i < if_outputs.size(); ++i) {
    const ir::Value* bo = branch->outputs()[i];
    if (!if_outputs[i] || (claimed.count(bo) && outputs.at(bo) == if_outputs[i])) continue;
    NFUSE_ASSIGN_OR_RETURN(ir::Value * src, resolve(bo));
    graph.add_node("Identity", prefix + "output_" + std::to_string(i), {src}, {if_outputs[i]})->opset = 13;
  }
  log.add(label + ": condition is constant " + (taken ? "true" : "false") + "; inlined its " +
          (taken ? "then" : "else") + " branch (" + std::to_string(branch->nodes().size()) + " nodes)");
  return true;
}

}  // namespace

Status fold_constant_if(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fold(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
