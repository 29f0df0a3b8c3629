// A Plan: the graph specialised to concrete input shapes, split into backend steps, with every
// intermediate tensor placed in one arena. Built once per input-shape signature.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "compile/memory_planner.h"
#include "ir/graph.h"
#include "partition/partition_options.h"
#include "partition/partitioner.h"

namespace nfuse::compile {

struct PlannedValue {
  const ir::Value* value = nullptr;
  ir::TensorType type;            // concrete where propagation could tell
  bool known_value = false;       // folded at plan time: never computed at run time
  int64_t arena_offset = -1;      // >= 0 when the value lives in the arena
  int first_step = -1, last_step = -1;
};

struct Step {
  backends::Partition partition;
  std::unique_ptr<backends::CompiledPartition> compiled;
  // Arena offsets of compiled->scratch_needs(), in their order (bound once the arena exists).
  std::vector<size_t> scratch_offsets;
};

struct Plan {
  // The graph the plan was built on when it is not the session's own: a copy re-optimized for
  // these input shapes (runtime/shape_specialization.h), whose pass changes follow. Null when
  // the plan runs the session's graph. First, so it outlives the steps built from it.
  std::shared_ptr<const ir::Graph> specialized_graph;
  std::vector<std::string> specialization_changes;
  // The If/Loop/Scan bodies' runner of a specialized graph (its bodies are its own copies).
  std::shared_ptr<void> specialized_subgraphs;
  std::vector<PlannedValue> values;  // index = slot
  std::unordered_map<const ir::Value*, int> slot_of;
  std::vector<ir::Tensor> folded;    // slot -> value for known_value slots (empty otherwise)
  std::vector<Step> steps;
  std::vector<int> input_slots;      // graph inputs, in order
  std::vector<int> output_slots;     // graph outputs, in order
  MemoryPlan memory;                 // tensors and the partitions' scratch
  size_t tensor_arena_bytes = 0;     // what the tensors alone would need
  std::vector<size_t> tensor_offsets;  // the tensors-alone layout behind tensor_arena_bytes
  // The arena layout and the fused groups' strip heights came from a context binary (checked)
  // instead of being planned again.
  bool layout_from_binary = false;
  size_t scratch_bytes = 0;          // the largest scratch need of one step (inside the arena)
  int folded_nodes = 0;              // nodes evaluated at plan time
  // Where every node runs and why, when the partitioner placed them (backend "auto", pins,
  // denials); null for one named backend.
  std::shared_ptr<const partition::PartitionResult> partition_report;

  // The plan's types of `graph`'s values (the graph's own where the plan has no slot) as
  // backends and the cost model see them. Valid while the plan lives.
  backends::PlanView view(const ir::Graph& graph) const;
};

// A placement decided when a context binary was compiled (compile/context): the partitioner's
// result for one input signature at one thread count, its pointers into the graph it was read
// with. A plan for that signature and thread count uses it instead of partitioning again.
struct StoredPlacement {
  std::map<std::string, std::vector<int64_t>> signature;
  int threads = 1;
  partition::PartitionResult result;
};

// The layout decisions of one compiled plan (input signature, thread count), as a context binary
// stores them: each fused group's strip height by its first member (pointers into the graph it
// was read with), and the arena offsets of the plan's buffer requests (the tensors alone, then
// with the partitions' scratch). A plan for that signature and thread count takes the strip
// heights as its choice and the offsets once check_memory_plan accepts them.
struct StoredLayout {
  std::map<std::string, std::vector<int64_t>> signature;
  int threads = 1;
  std::vector<std::pair<const ir::Node*, int>> tile_rows;
  std::vector<size_t> tensor_offsets, offsets;
};

struct PlanOptions {
  std::string backend = "ref";  // a backend's name, or "auto": the cost-model partitioner
  int threads = 1;
  partition::PartitionOptions partition;
  int tile_rows = 0;            // fusion strips; 0: the cost model's choice
  // The intra-op workers every partition runs on: a runtime's, shared by its sessions (one set
  // of workers per thread count, so sessions that take turns do not keep idle pools spinning on
  // the same cores). Null, or one of another size: the plan makes its own.
  std::shared_ptr<ThreadPool> workers;
  // Runs If/Loop/Scan bodies (CompileContext::run_subgraph); null: the reference interpreter.
  std::shared_ptr<const backends::SubgraphRunner> run_subgraph;
  // Prepacked weights shared by the plans of the session's own graph (CompileContext::packs).
  std::shared_ptr<backends::PackStore> packs;
  // Placements a context binary brought for this graph (not for other graphs: its pointers).
  std::shared_ptr<const std::vector<StoredPlacement>> placements;
  // Layouts a context binary brought for this graph (not for other graphs: its pointers).
  std::shared_ptr<const std::vector<StoredLayout>> layouts;
};

// build_plan's first stage alone: concrete types and the values known at plan time, no steps
// and no arena (nothing compiled). What the runtime looks at before it decides which graph to
// plan (runtime/shape_specialization.h).
Result<std::unique_ptr<Plan>> propagate_plan(const ir::Graph& graph,
                                             const std::map<std::string, std::vector<int64_t>>& input_dims);

// Specialises `graph` to `input_dims` (one entry per graph input, by name), propagates shapes
// and shape-like constants, assigns nodes to the backend, plans the arena and compiles steps.
Result<std::unique_ptr<Plan>> build_plan(const ir::Graph& graph,
                                         const std::map<std::string, std::vector<int64_t>>& input_dims,
                                         const PlanOptions& options);

}  // namespace nfuse::compile
