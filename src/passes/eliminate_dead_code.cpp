#include "passes/eliminate_dead_code.h"

#include <algorithm>
#include <unordered_set>

namespace nfuse::passes {
namespace {

Status select_outputs(ir::Graph& graph, const std::vector<std::string>& keep, PassLog& log) {
  std::vector<ir::Value*> selected;
  for (const std::string& name : keep) {
    auto it = std::find_if(graph.outputs().begin(), graph.outputs().end(),
                           [&](const ir::Value* v) { return v->name == name; });
    if (it == graph.outputs().end()) {
      std::string known;
      for (const ir::Value* v : graph.outputs()) known += (known.empty() ? "'" : ", '") + v->name + "'";
      return invalid_argument("unknown output '" + name + "': the model's outputs are " + known);
    }
    if (std::find(selected.begin(), selected.end(), *it) == selected.end()) selected.push_back(*it);
  }
  for (const ir::Value* v : graph.outputs()) {
    if (std::find(selected.begin(), selected.end(), v) == selected.end()) {
      log.add("dropped graph output '" + v->name + "' (not requested)");
    }
  }
  graph.outputs() = std::move(selected);
  return ok_status();
}

}  // namespace

// Pattern: a node none of whose outputs reaches a graph output  ->  removed
Status eliminate_dead_code(ir::Graph& graph, const std::vector<std::string>& keep_outputs, PassLog& log) {
  if (!keep_outputs.empty()) NFUSE_RETURN_IF_ERROR_PLAIN(select_outputs(graph, keep_outputs, log));
  graph.relink();
  std::unordered_set<const ir::Value*> live(graph.outputs().begin(), graph.outputs().end());
  std::vector<ir::Node*> dead;
  // Nodes are in topological order: walking backwards sees every consumer before its producer.
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    ir::Node& n = **it;
    const bool needed = std::any_of(n.outputs.begin(), n.outputs.end(), [&](const ir::Value* v) { return v && live.count(v); });
    if (!needed) {
      dead.push_back(&n);
      continue;
    }
    live.insert(n.inputs.begin(), n.inputs.end());
    live.insert(n.implicit_inputs.begin(), n.implicit_inputs.end());
  }
  if (dead.empty()) return ok_status();
  std::string names;
  for (size_t i = 0; i < dead.size(); ++i) {
    graph.remove_node(dead[dead.size() - 1 - i]);
    if (i < 8) names += (i ? ", " : "") + dead[dead.size() - 1 - i]->label();
  }
  if (dead.size() > 8) names += ", ... (" + std::to_string(dead.size() - 8) + " more)";
  log.add("removed " + std::to_string(dead.size()) + " node" + (dead.size() == 1 ? "" : "s") +
          " no graph output needs: " + names);
  graph.compact();
  return ok_status();
}

}  // namespace nfuse::passes
