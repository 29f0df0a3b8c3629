// fold_constants: evaluates nodes whose inputs are all constants and replaces their outputs by
// constants, including shape-like values the schemas compute from static types (Shape and Size
// of a value with a static shape), so PyTorch's Shape->Gather->Unsqueeze->Concat->Reshape
// chains fold when input shapes are static.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

// Runs one node on concrete inputs (nullptr for omitted optional inputs) and returns its
// outputs. src/passes may not include backends, so the runtime passes backends::ref::node_evaluator().
using NodeEvaluator = std::function<Result<std::vector<ir::Tensor>>(const ir::Node&,
                                                                    const std::vector<const ir::Tensor*>&)>;

inline constexpr int64_t kDefaultFoldMaxElements = int64_t{1} << 22;

struct FoldConstantsOptions {
  NodeEvaluator evaluator;  // may be empty: then only schema-computed (shape-like) values fold
  // A node folds when each output has at most this many elements or no more than all its inputs
  // together (folding never grows the model by much: Expand/Tile/ConstantOfShape stay lazy).
  int64_t max_elements = kDefaultFoldMaxElements;
  // DequantizeLinear of constants folds too. Off in the first stage, where the QDQ fusion passes
  // must still see quantized weights; on after them, so a weight whose layer stayed in float (a
  // layer producing a graph output, an op with no integer kernel) becomes a plain f32 constant
  // that the float kernels take, instead of being dequantized on every run.
  bool fold_dequantize = false;
};

// Never fails on a node it cannot evaluate (it stays); fails only on an internal inconsistency.
Status fold_constants(ir::Graph& graph, const FoldConstantsOptions& options, PassLog& log);

}  // namespace nfuse::passes
