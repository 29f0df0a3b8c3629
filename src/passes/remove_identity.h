// remove_identity: drops Identity and inference-mode Dropout nodes, rewiring their consumers to
// the input. A graph output keeps its name: the producer of the input is made to write the
// output value directly; where that cannot be done (the input is a graph input, a constant or
// another graph output) the node stays, since a graph output must be a distinct value.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status remove_identity(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
