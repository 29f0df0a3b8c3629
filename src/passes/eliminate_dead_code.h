// eliminate_dead_code: removes every node no graph output needs, and with an output filter
// (`nfuse ... --outputs a,b`) first drops the graph outputs not asked for, so that only what the
// requested outputs need remains. Graph inputs stay (the caller's interface does not change).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

// `keep_outputs` empty keeps every graph output; otherwise the graph's outputs become exactly
// these, in this order. kInvalidArgument naming the unknown output and listing the model's
// outputs when a name is not a graph output.
Status eliminate_dead_code(ir::Graph& graph, const std::vector<std::string>& keep_outputs, PassLog& log);

}  // namespace nfuse::passes
