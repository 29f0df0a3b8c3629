// How a control-flow node (If, Loop, Scan) runs one of its bodies. The plan hands backends a
// runner that compiles each body on the session's backends (runtime/compiled_subgraphs.h); the
// reference kernels, left to themselves, interpret it node after node.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backends/run_profile.h"
#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::backends {

// Resolves an outer-scope value (one the body reads from an enclosing graph) by name; null
// when the owner has no such value.
using OuterLookup = std::function<const ir::Tensor*(const std::string&)>;

// Runs `body`, a subgraph of `owner`, on `inputs` (the body's formal inputs, in order) and
// returns its outputs in order. With `profile`, the body's nodes are timed into it.
using SubgraphRunner = std::function<Result<std::vector<ir::Tensor>>(const ir::Node& owner, const ir::Graph& body,
                                                                     const std::vector<ir::Tensor>& inputs,
                                                                     const OuterLookup& outer, RunProfile* profile)>;

}  // namespace nfuse::backends
