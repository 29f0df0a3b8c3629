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
// outputs. src/passes may not include backends, so the runtime passes backends::ref::evaluate_node.
using NodeEvaluator = std::function<Result<std::vector<ir::Tensor>>(const ir::Node&,
                                                                    const std::vector<const ir::Tensor*>&)>;

inline constexpr int64_t kDefaultFoldMaxElements = int64_t{1} << 22;

struct FoldConstantsOptions {
  NodeEvaluator evaluator;  // may be empty: then only schema-computed (shape-like) values fold
  // A node folds when each output has at most this many elements or no more than all its inputs
  // together (folding never grows the model by much: Expand/Tile/ConstantOfShape stay lazy).
  int64_t max_elements = kDefaultFoldMaxElements;
};

// Never fails on a node it cannot evaluate (it stays); fails only on an internal inconsistency.
Status fold_constants(ir::Graph& graph, const FoldConstantsOptions& options, PassLog& log);

}  // namespace nfuse::passes
