// The reference interpreter: the evaluator that planning (plan-time folding), the constant-
// folding pass, quantization (calibration) and export use, and the oracle of the tests. Its one
// entry point is evaluate_node; a graph is that, node after node (interpret_graph), and every
// node runs through run_reference_kernel, the same path as the ref backend's steps.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::backends::ref {

// Evaluates one node on its reference kernel: infers the output shapes from the actual inputs,
// allocates the outputs and runs. kUnsupported when the op has no reference kernel.
Result<std::vector<ir::Tensor>> evaluate_node(const ir::Node& node, const std::vector<const ir::Tensor*>& inputs,
                                              const std::vector<const ir::Tensor*>& implicit_inputs = {});

// evaluate_node in the form the passes take it (passes::NodeEvaluator: no implicit inputs).
using NodeEvaluatorFn =
    std::function<Result<std::vector<ir::Tensor>>(const ir::Node&, const std::vector<const ir::Tensor*>&)>;
const NodeEvaluatorFn& node_evaluator();

// Runs a whole graph with plain heap allocation, each node by evaluate_node (subgraphs, tests).
// `outer` resolves outer-scope references; it may be empty for a top-level graph.
Result<std::vector<ir::Tensor>> interpret_graph(const ir::Graph& graph, const std::vector<ir::Tensor>& inputs,
                                                const std::function<const ir::Tensor*(const std::string&)>& outer = {});

}  // namespace nfuse::backends::ref
