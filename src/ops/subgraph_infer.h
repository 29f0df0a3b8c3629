// Shape inference through a subgraph (If branches, Scan bodies) for the owning node's infer.
#pragma once

#include <vector>

#include "ir/op_registry.h"

namespace nfuse::ops {

// Runs every node's inference in `g` and returns the types of g's outputs. `input_types` gives
// g's inputs (one per graph input, may be empty for If branches); outer-scope references take
// the types (and constant values) of `owner`'s implicit inputs of the same name. Where inference
// knows less than the subgraph's declared output types, the declared dims are kept.
Result<std::vector<ir::TensorType>> infer_subgraph(const ir::Node& owner, const ir::Graph& g,
                                                   const std::vector<ir::TensorType>& input_types = {});

}  // namespace nfuse::ops
