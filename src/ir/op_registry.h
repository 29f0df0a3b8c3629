// The op registry: per op type, arity, attribute verification and shape/dtype inference.
// src/ops fills it (ops::register_builtin_ops, called once by register_builtins); no kernels live
// there.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace nfuse::ir {

// What an op's infer function sees: input types, input values where known (constants at
// import time; every input at run time) and output slots to fill.
struct InferContext {
  const Node& node;
  std::vector<const TensorType*> input_types;  // nullptr for omitted optional inputs
  std::vector<const Tensor*> input_values;     // nullptr where the value is not known
  // Values of node.implicit_inputs (outer-scope values used by subgraphs), where known.
  std::vector<const Tensor*> implicit_values;
  std::vector<TensorType> output_types;        // sized to the node's outputs; infer fills them
  // Optional: infer may compute an output's value when it is cheap and shape-like (Shape, Size).
  std::vector<Tensor> output_values;

  int num_inputs() const { return static_cast<int>(input_types.size()); }
  bool has_input(int i) const { return i < num_inputs() && input_types[static_cast<size_t>(i)]; }
  const TensorType& input(int i) const { return *input_types[static_cast<size_t>(i)]; }
  const Shape& shape(int i) const { return input(i).shape; }
  DType dtype(int i) const { return input(i).dtype; }
  const Tensor* value(int i) const {
    return i < static_cast<int>(input_values.size()) ? input_values[static_cast<size_t>(i)] : nullptr;
  }
  TensorType& output(int i) { return output_types[static_cast<size_t>(i)]; }
  int num_outputs() const { return static_cast<int>(output_types.size()); }
  const Attributes& attrs() const { return node.attrs; }
  // kInvalidModel naming the node.
  Status error(const std::string& message) const;
};

using VerifyFn = Status (*)(const Node&);
using InferFn = Status (*)(InferContext&);

struct OpSchema {
  std::string op_type;
  int min_inputs = 1;
  int max_inputs = 1;
  int min_outputs = 1;
  int max_outputs = 1;
  VerifyFn verify = nullptr;  // attribute checks that need no shapes; may be null
  InferFn infer = nullptr;    // required: output dtypes and shapes
  std::string domain = "";    // "" = ONNX default domain
  // The kernel sizes and allocates its outputs itself (Loop: the trip count is data). Backends
  // then pass empty output tensors for the kernel to replace.
  bool kernel_allocates_outputs = false;
};

class OpRegistry {
 public:
  static OpRegistry& global();
  // Registers a schema (replacing one of the same domain and type).
  bool add(OpSchema schema);
  const OpSchema* find(std::string_view op_type, std::string_view domain = "") const;
  std::vector<std::string> op_types() const;  // sorted

 private:
  std::unordered_map<std::string, OpSchema> schemas_;
};

// Checks arity and runs the op's verify (kUnsupported for an unregistered op).
Status verify_node(const Node& node);
// Runs the op's inference. `values[i]`, where given, is input i's actual tensor (its dims
// override the recorded type); constants are used where no value is given.
// Fills `out_types` (and `out_values` where infer computed one).
// `types[i]`, where given, overrides the recorded type of input i (a plan's concrete types).
Status infer_node(const Node& node, const std::vector<const Tensor*>& values,
                  std::vector<TensorType>* out_types, std::vector<Tensor>* out_values = nullptr,
                  const std::vector<const TensorType*>& types = {},
                  const std::vector<const Tensor*>& implicit_values = {});

}  // namespace nfuse::ir
