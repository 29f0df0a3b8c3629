#include "ir/graph.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "ir/op_registry.h"

namespace nfuse::ir {

std::string Node::label() const {
  return op_type + " '" + name + "'";
}

Result<Value*> Graph::add_value(const std::string& value_name, TensorType type) {
  if (by_name_.count(value_name)) {
    return invalid_model("value name '" + value_name + "' is defined twice in graph '" + name + "'");
  }
  auto v = std::make_unique<Value>();
  v->name = value_name;
  v->type = std::move(type);
  Value* raw = v.get();
  values_.push_back(std::move(v));
  if (!value_name.empty()) by_name_[value_name] = raw;
  return raw;
}

Value* Graph::add_unique_value(const std::string& hint, TensorType type) {
  std::string candidate = hint;
  while (candidate.empty() || by_name_.count(candidate)) {
    candidate = hint + "__" + std::to_string(++unique_counter_);
  }
  return add_value(candidate, std::move(type)).value();
}

void Graph::reserve(size_t values, size_t nodes) {
  values_.reserve(values_.size() + values);
  by_name_.reserve(by_name_.size() + values);
  nodes_.reserve(nodes_.size() + nodes);
}

Value* Graph::find_value(const std::string& value_name) const {
  auto it = by_name_.find(value_name);
  return it == by_name_.end() ? nullptr : it->second;
}

Node* Graph::add_node(std::string op_type, std::string node_name, std::vector<Value*> ins,
                      std::vector<Value*> outs, Attributes attrs) {
  auto n = std::make_unique<Node>();
  n->op_type = std::move(op_type);
  n->name = std::move(node_name);
  n->inputs = std::move(ins);
  n->outputs = std::move(outs);
  n->attrs = std::move(attrs);
  auto it = opsets.find("");
  n->opset = it == opsets.end() ? 0 : it->second;
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  return raw;
}

void Graph::remove_node(Node* n) { removed_.push_back(n); }

void Graph::compact() {
  if (!removed_.empty()) {
    std::unordered_set<Node*> dead(removed_.begin(), removed_.end());
    std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) != 0; });
    removed_.clear();
  }
  std::unordered_set<const Value*> used(inputs_.begin(), inputs_.end());
  used.insert(outputs_.begin(), outputs_.end());
  for (const auto& n : nodes_) {
    used.insert(n->inputs.begin(), n->inputs.end());
    used.insert(n->outputs.begin(), n->outputs.end());
    used.insert(n->implicit_inputs.begin(), n->implicit_inputs.end());
  }
  std::erase_if(values_, [&](const std::unique_ptr<Value>& v) {
    if (used.count(v.get())) return false;
    by_name_.erase(v->name);
    return true;
  });
  relink();
}

void Graph::relink() {
  for (auto& v : values_) {
    v->producer = nullptr;
    v->producer_output = -1;
    v->consumers.clear();
    v->is_graph_input = false;
    v->is_graph_output = false;
  }
  for (Value* v : inputs_) v->is_graph_input = true;
  for (Value* v : outputs_) v->is_graph_output = true;
  for (auto& n : nodes_) {
    for (Value* in : n->inputs)
      if (in) in->consumers.push_back(n.get());
    for (Value* in : n->implicit_inputs) in->consumers.push_back(n.get());
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      if (!n->outputs[i]) continue;
      n->outputs[i]->producer = n.get();
      n->outputs[i]->producer_output = static_cast<int>(i);
    }
  }
}

Status Graph::topo_sort() {
  relink();
  // Kahn's algorithm; ties keep the original order so the result is deterministic.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  auto deps_of = [&](const Node& n) {
    std::vector<const Node*> deps;
    auto add = [&](const Value* v) {
      if (v && v->producer && !v->is_constant()) deps.push_back(v->producer);
    };
    for (const Value* v : n.inputs) add(v);
    for (const Value* v : n.implicit_inputs) add(v);
    return deps;
  };
  std::vector<std::vector<size_t>> users(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (const Node* d : deps_of(*nodes_[i])) {
      ++pending[i];
      users[position[d]].push_back(i);
    }
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.push_back(i);
  std::vector<size_t> order;
  order.reserve(nodes_.size());
  // `ready` is kept sorted descending so that back() is the earliest original position.
  std::sort(ready.rbegin(), ready.rend());
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) {
        ready.insert(std::upper_bound(ready.begin(), ready.end(), u, std::greater<size_t>()), u);
      }
    }
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (pending[i] > 0) {
        return invalid_model("graph '" + name + "' has a cycle through node " + nodes_[i]->label());
      }
    }
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
  return ok_status();
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_) {
    for (Value*& in : n->inputs)
      if (in == from) in = to;
    for (Value*& in : n->implicit_inputs)
      if (in == from) in = to;
  }
  for (Value*& out : outputs_)
    if (out == from) out = to;
}

static bool shapes_compatible(const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known()) return true;
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a[i].is_static() && b[i].is_static() && a[i].value != b[i].value) return false;
  }
  return true;
}

Status Graph::verify() const {
  std::unordered_set<const Value*> defined;
  std::unordered_set<const Value*> produced;
  std::unordered_set<std::string_view> names;  // views of the values' own names
  defined.reserve(values_.size());
  produced.reserve(values_.size());
  names.reserve(values_.size());
  for (const auto& v : values_) {
    if (!v->name.empty() && !names.insert(v->name).second) {
      return invalid_model("value name '" + v->name + "' is used twice");
    }
    if (v->is_constant() || v->is_outer_ref) defined.insert(v.get());
  }
  for (const Value* v : inputs_) defined.insert(v);
  for (const auto& n : nodes_) {
    NFUSE_RETURN_IF_ERROR(verify_node(*n), "graph '" + name + "'");
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      if (in && !defined.count(in)) {
        return invalid_model(n->label() + ": input " + std::to_string(i) + " '" + in->name +
                             "' is not defined before use (missing initializer or not topological)");
      }
    }
    for (const Value* in : n->implicit_inputs) {
      if (!defined.count(in)) {
        return invalid_model(n->label() + ": outer-scope value '" + in->name + "' is not defined");
      }
    }
    std::vector<TensorType> inferred;
    NFUSE_RETURN_IF_ERROR(infer_node(*n, {}, &inferred), "graph '" + name + "'");
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const Value* out = n->outputs[i];
      if (!out) continue;
      if (!produced.insert(out).second || out->is_constant() || out->is_graph_input) {
        return invalid_model("value '" + out->name + "' has more than one producer");
      }
      defined.insert(out);
      const TensorType& got = inferred[i];
      if (out->type.dtype != DType::kUndefined && got.dtype != DType::kUndefined &&
          got.dtype != out->type.dtype) {
        return invalid_model(n->label() + ": output '" + out->name + "' is recorded as " +
                             out->type.to_string() + " but the op produces " + got.to_string());
      }
      if (!shapes_compatible(out->type.shape, got.shape)) {
        return invalid_model(n->label() + ": output '" + out->name + "' is recorded as " +
                             out->type.to_string() + " but the op produces " + got.to_string());
      }
    }
  }
  for (const Value* out : outputs_) {
    if (!defined.count(out)) return invalid_model("graph output '" + out->name + "' is never produced");
  }
  return ok_status();
}

}  // namespace nfuse::ir
