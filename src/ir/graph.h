// The nfuse IR: a Graph owns Nodes and Values. Nodes are kept in topological order.
// Values carry a static type, an optional constant and optional quantization parameters.
// The IR knows nothing of ONNX protobuf or of any backend.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/attributes.h"
#include "ir/shape.h"
#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::ir {

class Node;

// Scale / zero point, per tensor (one entry, axis -1) or per axis (one entry per channel).
struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int axis = -1;
  DType storage = DType::kUndefined;  // i8, u8, i16, ... of the quantized data

  bool empty() const { return scale.empty(); }
  bool per_axis() const { return scale.size() > 1 || axis >= 0; }
};

class Value {
 public:
  std::string name;
  TensorType type;
  std::optional<Tensor> constant;  // initializer, Constant node output or folded value
  QuantParams quant;

  // Maintained by Graph::relink(); read-only for passes.
  Node* producer = nullptr;
  int producer_output = -1;
  std::vector<Node*> consumers;
  bool is_graph_input = false;
  bool is_graph_output = false;
  // A subgraph value defined in an enclosing graph (ONNX outer-scope reference).
  bool is_outer_ref = false;

  bool is_constant() const { return constant.has_value(); }
};

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  int opset = 0;       // the model's opset for this node's domain (frontends normalise to latest form)
  std::vector<Value*> inputs;  // nullptr marks an omitted optional input
  std::vector<Value*> outputs;
  Attributes attrs;
  // Outer-scope values used by subgraphs in attrs (If branches); inputs in all but name.
  std::vector<Value*> implicit_inputs;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  int num_outputs() const { return static_cast<int>(outputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[static_cast<size_t>(i)] != nullptr; }
  Value* input(int i) const { return has_input(i) ? inputs[static_cast<size_t>(i)] : nullptr; }
  Value* output(int i) const { return outputs[static_cast<size_t>(i)]; }
  std::string label() const;  // "Conv 'conv1'"
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  std::unordered_map<std::string, int> opsets;  // domain -> opset version
  Graph* parent = nullptr;                      // enclosing graph of a subgraph
  // What the importer did that the file did not say (nodes it sorted), for `inspect -v`.
  std::vector<std::string> import_notes;

  // Creates a value; the name must be unique in this graph (kInvalidModel otherwise).
  Result<Value*> add_value(const std::string& name, TensorType type = {});
  // Creates a value with a fresh unique name derived from `hint`.
  Value* add_unique_value(const std::string& hint, TensorType type = {});
  Value* find_value(const std::string& name) const;
  // Room for `values` values and `nodes` nodes before a batch of additions (a decoder that knows
  // the counts: no regrowth of the tables).
  void reserve(size_t values, size_t nodes);
  // Appends a node (not yet linked: call relink() or topo_sort() after a batch of edits).
  Node* add_node(std::string op_type, std::string name, std::vector<Value*> inputs,
                 std::vector<Value*> outputs, Attributes attrs = {});
  // Removes nodes marked by remove_node() and values nothing refers to.
  void remove_node(Node* n);
  void compact();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  std::vector<Value*>& inputs() { return inputs_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*>& outputs() { return outputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  // Recomputes producer/consumer links and graph-input/output flags.
  void relink();
  // Reorders nodes topologically (stable); kInvalidModel naming a node on a cycle.
  Status topo_sort();
  // Replaces every use of `from` (node inputs and graph outputs) by `to`.
  void replace_all_uses(Value* from, Value* to);

  // Checks the invariants: unique names, single producers, topological order, every input
  // defined, registered ops whose verify passes, and recorded types consistent with inference.
  Status verify() const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Node*> removed_;
  int unique_counter_ = 0;
};

}  // namespace nfuse::ir
