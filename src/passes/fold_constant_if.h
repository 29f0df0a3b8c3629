// fold_constant_if: an If whose condition is a constant (an initializer, or a value that
// fold_constants computed: exporters often wrap a network in a shape check that static shapes
// decide) is replaced by the nodes of the branch it takes, inlined into the graph, so they are
// optimized, placed and compiled like the rest instead of interpreted inside the If.
// Branches that hold control flow of their own stay as they are.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fold_constant_if(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
