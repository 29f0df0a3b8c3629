// Re-optimizing a session's graph for one input-shape signature. An If whose condition the
// input shapes decide (an exporter's `Shape -> Gather -> Equal` check on a symbolic dim) stays an
// If after Session::create, because the dims are unknown there; a plan binds them and finds the
// condition known. A copy of the graph with those dims then folds (fold_constants,
// fold_constant_if) to the branch taken, whose nodes fuse with their neighbours like any others:
// no body is entered per run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compile/plan.h"
#include "ir/graph.h"
#include "passes/pass_manager.h"

namespace nfuse::runtime {

// True when graph has an If among its own nodes (bodies aside): the only graphs worth a look.
bool has_top_level_if(const ir::Graph& graph);

// True when `plan` (built or propagated on `graph`) knows the condition of one of graph's top-level Ifs but
// still runs that If.
bool plan_decides_an_if(const ir::Graph& graph, const compile::Plan& plan);

// A copy of `graph` with its inputs' shapes set to `input_dims`, shapes inferred again and the
// default passes run; `report` gets what they changed. The copy has graph's inputs and outputs,
// by name and in order (else kInternal: the caller keeps its first plan).
Result<std::unique_ptr<ir::Graph>> specialize_to_shapes(const ir::Graph& graph,
                                                        const std::map<std::string, std::vector<int64_t>>& input_dims,
                                                        passes::PassReport* report);

}  // namespace nfuse::runtime
