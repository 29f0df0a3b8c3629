// Shape inference over a whole graph: every value gets the most precise dtype and shape the
// op schemas can tell, merged with what the model declared.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::ir {

// Runs each op's inference in topological order (subgraphs first). Declared types are kept
// where they are more precise; a declared static dim that contradicts an inferred static dim,
// or a dtype conflict, is kInvalidModel naming the node and the value.
Status infer_shapes(ir::Graph& graph);

}  // namespace nfuse::ir
