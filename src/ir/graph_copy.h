// Deep copies of graphs. A control-flow body copied as a graph of its own can be optimized,
// planned and compiled like a model (runtime/compiled_subgraphs.h) without touching the graph
// that owns it.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::ir {

// A copy of `g`: its values (constants share their data), nodes and subgraphs (copied too, their
// outer references kept). With `outer_refs_as_inputs`, the values `g` reads from enclosing
// graphs become graph inputs after its own, in the order of g.values(), and the copy is a
// top-level graph with the opsets of g's outermost graph.
Result<std::unique_ptr<Graph>> copy_graph(const Graph& g, bool outer_refs_as_inputs);

}  // namespace nfuse::ir
