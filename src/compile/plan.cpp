#include "compile/plan.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "backends/device_profile.h"
#include "backends/ref/interpreter.h"
#include "core/thread_pool.h"
#include "ir/op_registry.h"
#include "ops/op_helpers.h"

namespace nfuse::compile {

backends::PlanView Plan::view(const ir::Graph& graph) const {
  return backends::PlanView(graph, this, [](const void* context, const ir::Value* v) -> const ir::TensorType* {
    const Plan& plan = *static_cast<const Plan*>(context);
    auto it = plan.slot_of.find(v);
    return it == plan.slot_of.end() ? nullptr : &plan.values[static_cast<size_t>(it->second)].type;
  });
}
namespace {

// Folding materialises values at plan time; cap it so a ConstantOfShape of a huge shape stays
// a run-time tensor in the arena instead of plan memory.
constexpr int64_t kMaxFoldElements = int64_t{1} << 22;

int slot_for(Plan& plan, const ir::Value* v) {
  auto [it, inserted] = plan.slot_of.emplace(v, static_cast<int>(plan.values.size()));
  if (inserted) {
    PlannedValue& pv = plan.values.emplace_back();
    pv.value = v;
    plan.folded.emplace_back();
    if (v->constant) {
      pv.known_value = true;
      pv.type = ir::TensorType{v->constant->dtype(), ir::Shape::from_dims(v->constant->dims())};
      plan.folded.back() = *v->constant;
    } else {
      pv.type = v->type;
    }
  }
  return it->second;
}

bool all_inputs_known(const Plan& plan, const ir::Node& node) {
  for (const ir::Value* v : node.inputs)
    if (v && !plan.values[static_cast<size_t>(plan.slot_of.at(v))].known_value) return false;
  for (const ir::Value* v : node.implicit_inputs)
    if (!plan.values[static_cast<size_t>(plan.slot_of.at(v))].known_value) return false;
  return true;
}

// Propagates concrete types through the graph; evaluates nodes whose inputs are all known.
Status propagate(const ir::Graph& graph, Plan& plan, std::vector<const ir::Node*>* runtime_nodes) {
  for (const auto& node_ptr : graph.nodes()) {
    const ir::Node& node = *node_ptr;
    // Slots first: pointers into plan.values below must not be invalidated by growth.
    for (const ir::Value* v : node.implicit_inputs) slot_for(plan, v);
    for (const ir::Value* v : node.outputs)
      if (v) slot_for(plan, v);
    std::vector<const ir::Tensor*> values;
    std::vector<const ir::TensorType*> in_types;
    for (const ir::Value* v : node.inputs) {
      if (!v) {
        values.push_back(nullptr);
        in_types.push_back(nullptr);
        continue;
      }
      if (!plan.slot_of.count(v)) return invalid_model(node.label() + ": input '" + v->name + "' is undefined");
      const size_t s = static_cast<size_t>(plan.slot_of.at(v));
      values.push_back(plan.values[s].known_value ? &plan.folded[s] : nullptr);
      in_types.push_back(&plan.values[s].type);
    }
    std::vector<ir::TensorType> types;
    std::vector<ir::Tensor> out_values;
    std::vector<const ir::Tensor*> implicit_values;
    for (const ir::Value* v : node.implicit_inputs) {
      const size_t s = static_cast<size_t>(plan.slot_of.at(v));
      implicit_values.push_back(plan.values[s].known_value ? &plan.folded[s] : nullptr);
    }
    // Types of unknown inputs come from the plan, which is more concrete than the graph's.
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(node, values, &types, &out_values, in_types, implicit_values));
    bool fold = all_inputs_known(plan, node);
    for (const auto& t : types) {
      auto n = t.shape.static_numel();
      if (!n || *n > kMaxFoldElements) fold = false;
    }
    if (fold) {
      NFUSE_ASSIGN_OR_RETURN(auto outs, backends::ref::evaluate_node(node, values, implicit_values));
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (!node.outputs[i]) continue;
        int s = slot_for(plan, node.outputs[i]);
        plan.values[static_cast<size_t>(s)].known_value = true;
        plan.values[static_cast<size_t>(s)].type = {outs[i].dtype(), ir::Shape::from_dims(outs[i].dims())};
        plan.folded[static_cast<size_t>(s)] = std::move(outs[i]);
      }
      ++plan.folded_nodes;
      continue;
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i]) continue;
      int s = slot_for(plan, node.outputs[i]);
      plan.values[static_cast<size_t>(s)].type = types[i];
      if (i < out_values.size() && !out_values[i].empty()) {
        plan.values[static_cast<size_t>(s)].known_value = true;
        plan.folded[static_cast<size_t>(s)] = out_values[i];
      }
    }
    bool all_outputs_known = true;
    for (const ir::Value* v : node.outputs)
      if (v && !plan.values[static_cast<size_t>(plan.slot_of.at(v))].known_value) all_outputs_known = false;
    if (all_outputs_known) {
      ++plan.folded_nodes;
      continue;
    }
    runtime_nodes->push_back(&node);
  }
  return ok_status();
}

// `steps[i]` is the lifetime step of nodes[i]: nodes a backend runs together share one. A value
// produced and consumed only within one such step (passed between the members of a fused group,
// which keeps it in its line buffers) never exists as a tensor and gets no arena space. A
// Reshape-like node with `views[i]` set (its backend copies nothing into an output that already
// holds the input) gets one buffer for its input and output, live as long as either.
// Returns one request per buffer; `request_of[slot]` is the request of each value that lives in
// the arena (SIZE_MAX for the others).
std::vector<BufferRequest> arena_requests(Plan& plan, const std::vector<const ir::Node*>& nodes,
                                          const std::vector<int>& steps, const std::vector<bool>& views,
                                          std::vector<size_t>* request_of_slot) {
  std::unordered_map<const ir::Node*, int> step_of;
  for (size_t i = 0; i < nodes.size(); ++i) step_of[nodes[i]] = steps[i];
  auto within_one_step = [&](const ir::Value* v, int step) {
    if (v->is_graph_output) return false;
    int shared = 0;
    for (const ir::Node* c : v->consumers) {
      auto it = step_of.find(c);
      if (it == step_of.end()) continue;  // folded at plan time: does not read it at run time
      if (it->second != step) return false;
      ++shared;
    }
    return shared > 0;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& n = *nodes[i];
    const size_t step = static_cast<size_t>(steps[i]);
    for (const ir::Value* v : n.outputs) {
      if (!v) continue;
      PlannedValue& pv = plan.values[static_cast<size_t>(plan.slot_of.at(v))];
      if (pv.first_step < 0) pv.first_step = static_cast<int>(step);
      pv.last_step = std::max(pv.last_step, static_cast<int>(step));
    }
    auto touch = [&](const ir::Value* v) {
      if (!v) return;
      PlannedValue& pv = plan.values[static_cast<size_t>(plan.slot_of.at(v))];
      pv.last_step = std::max(pv.last_step, static_cast<int>(step));
    };
    for (const ir::Value* v : n.inputs) touch(v);
    for (const ir::Value* v : n.implicit_inputs) touch(v);
  }
  std::vector<bool> internal(plan.values.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const ir::Value* v : nodes[i]->outputs)
      if (v && within_one_step(v, steps[i])) internal[static_cast<size_t>(plan.slot_of.at(v))] = true;
  }
  // Bytes of every value that lives in the arena (0: it does not).
  std::vector<size_t> bytes(plan.values.size(), 0);
  for (size_t s = 0; s < plan.values.size(); ++s) {
    const PlannedValue& pv = plan.values[s];
    if (pv.known_value || pv.first_step < 0 || pv.value->is_graph_output || internal[s]) continue;
    auto numel = pv.type.shape.static_numel();
    if (!numel || pv.type.dtype == ir::DType::kUndefined) continue;  // sized at run time
    bytes[s] = static_cast<size_t>(*numel) * ir::dtype_size(pv.type.dtype);
  }
  // A view's output joins its input's buffer (chains of views: one buffer for all).
  std::vector<size_t> root(plan.values.size());
  for (size_t s = 0; s < root.size(); ++s) root[s] = s;
  auto find = [&](size_t s) {
    while (root[s] != s) s = root[s] = root[root[s]];
    return s;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& n = *nodes[i];
    if (!views[i] || n.inputs.empty() || !n.input(0) || n.outputs.size() != 1 || !n.output(0)) continue;
    const size_t x = static_cast<size_t>(plan.slot_of.at(n.input(0))), y = static_cast<size_t>(plan.slot_of.at(n.output(0)));
    if (bytes[x] == 0 || bytes[y] != bytes[x]) continue;
    root[find(y)] = find(x);
  }
  std::vector<BufferRequest> requests;
  std::vector<size_t> request_of(plan.values.size(), SIZE_MAX);
  for (size_t s = 0; s < plan.values.size(); ++s) {
    if (bytes[s] == 0) continue;
    const PlannedValue& pv = plan.values[s];
    size_t& r = request_of[find(s)];
    if (r == SIZE_MAX) {
      r = requests.size();
      requests.push_back({bytes[s], pv.first_step, pv.last_step});
      continue;
    }
    requests[r].first_step = std::min(requests[r].first_step, pv.first_step);
    requests[r].last_step = std::max(requests[r].last_step, pv.last_step);
  }
  request_of_slot->assign(plan.values.size(), SIZE_MAX);
  for (size_t s = 0; s < plan.values.size(); ++s)
    if (bytes[s] > 0) (*request_of_slot)[s] = request_of[find(s)];
  return requests;
}

// `stored` when it is a layout of `requests` (check_memory_plan), else one planned here; *from_stored
// says which.
MemoryPlan stored_or_planned(const std::vector<BufferRequest>& requests, const std::vector<size_t>* stored,
                             bool* from_stored) {
  std::optional<MemoryPlan> checked;
  if (stored) checked = check_memory_plan(requests, *stored);
  *from_stored = checked.has_value();
  return checked ? std::move(*checked) : plan_memory(requests);
}

// Adds the compiled partitions' scratch needs (each live during its own lifetime step) to the
// tensors' requests, lays out the arena and records every offset: `stored`'s layout when it is
// one for these requests (check_memory_plan), else planned here.
void place_arena(Plan& plan, std::vector<BufferRequest> requests, const std::vector<size_t>& request_of_slot,
                 const std::vector<int>& first_lifetime_step, const StoredLayout* stored) {
  const size_t tensor_requests = requests.size();
  bool tensors_stored = false, all_stored = false;
  MemoryPlan tensors = stored_or_planned(requests, stored ? &stored->tensor_offsets : nullptr, &tensors_stored);
  plan.tensor_arena_bytes = tensors.arena_bytes;
  plan.tensor_offsets = std::move(tensors.offsets);
  std::vector<std::vector<backends::ScratchNeed>> needs(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    needs[i] = plan.steps[i].compiled->scratch_needs();
    for (const backends::ScratchNeed& n : needs[i]) {
      const int step = first_lifetime_step[i] + n.step;
      requests.push_back({n.bytes, step, step});
      plan.scratch_bytes = std::max(plan.scratch_bytes, n.bytes);
    }
  }
  plan.memory = stored_or_planned(requests, stored ? &stored->offsets : nullptr, &all_stored);
  plan.layout_from_binary = tensors_stored && all_stored;
  for (size_t s = 0; s < plan.values.size(); ++s)
    if (request_of_slot[s] != SIZE_MAX)
      plan.values[s].arena_offset = static_cast<int64_t>(plan.memory.offsets[request_of_slot[s]]);
  size_t next = tensor_requests;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (size_t k = 0; k < needs[i].size(); ++k) plan.steps[i].scratch_offsets.push_back(plan.memory.offsets[next++]);
}

// The partitioner decides placement for "auto", for the backends that take only some ops (as
// ONNX Runtime's execution providers: `--backend fusion` runs what fusion can, the rest falls
// back to cpu, and the report says which and why), and whenever the user said something about
// placement; the general fallback (cpu) and the reference alone run everything as one partition.
bool uses_partitioner(const PlanOptions& options) {
  const partition::PartitionOptions& o = options.partition;
  auto traits = backends::BackendRegistry::global().traits(options.backend);  // fails for "auto"
  const bool runs_everything = traits.ok() && (traits->is_general_fallback || traits->is_reference);
  return !runs_everything || !o.pins.empty() || !o.deny.empty() || !o.prefer.empty() || o.require_full_offload ||
         o.always_partition;
}

// The plan's input signature; nullopt when an input's dims are not all known.
std::optional<std::map<std::string, std::vector<int64_t>>> plan_signature(const Plan& plan) {
  std::map<std::string, std::vector<int64_t>> signature;
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    const PlannedValue& pv = plan.values[static_cast<size_t>(plan.input_slots[i])];
    const std::optional<std::vector<int64_t>> dims = pv.type.shape.static_dims();
    if (!dims) return std::nullopt;
    signature[pv.value->name] = *dims;
  }
  return signature;
}

// The layout a context binary stores for this plan's signature and thread count, or null.
const StoredLayout* stored_layout(const PlanOptions& options, const Plan& plan) {
  if (!options.layouts) return nullptr;
  const auto signature = plan_signature(plan);
  if (!signature) return nullptr;
  for (const StoredLayout& l : *options.layouts)
    if (l.threads == options.threads && l.signature == *signature) return &l;
  return nullptr;
}

// The placement a context binary stores for this signature and thread count, when it still fits
// the plan: each runtime node in exactly one partition, on a backend that runs it, no partition
// empty, and no partition reading a value a later one produces (partitions run in order; inside
// one, the backend orders its nodes). Null otherwise (the partitioner places the nodes again): a
// binary whose planner folded other nodes, or a hand-edited placement, costs a partitioning
// pass, never a wrong plan.
const partition::PartitionResult* stored_placement(const std::vector<const ir::Node*>& runtime_nodes,
                                                   const PlanOptions& options, const backends::PlanView& type_of,
                                                   partition::BackendPool& pool, const Plan& plan) {
  // A full-offload requirement is the partitioner's check to make.
  if (!options.placements || options.partition.require_full_offload) return nullptr;
  const auto signature = plan_signature(plan);
  if (!signature) return nullptr;
  for (const StoredPlacement& p : *options.placements) {
    if (p.threads != options.threads || p.signature != *signature) continue;
    if (p.result.prefer.empty()) return nullptr;
    std::unordered_map<const ir::Node*, int> partition_of;  // -1: a runtime node not placed yet
    for (const ir::Node* n : runtime_nodes) partition_of[n] = -1;
    size_t placed = 0;
    for (size_t i = 0; i < p.result.partitions.size(); ++i) {
      const partition::PartitionInfo& part = p.result.partitions[i];
      if (part.nodes.empty()) return nullptr;
      Result<backends::Backend*> backend = pool.get(part.backend);
      if (!backend.ok()) return nullptr;
      for (const ir::Node* n : part.nodes) {
        auto it = partition_of.find(n);
        if (it == partition_of.end() || it->second != -1) return nullptr;
        it->second = static_cast<int>(i);
        if (!(*backend)->supports(*n, type_of).ok()) return nullptr;
        ++placed;
      }
    }
    if (placed != runtime_nodes.size()) return nullptr;
    for (const auto& entry : partition_of) {
      const ir::Node* node = entry.first;
      const int at = entry.second;
      auto reads_later = [&partition_of, at](const ir::Value* v) {
        if (!v || !v->producer) return false;
        auto producer = partition_of.find(v->producer);
        return producer != partition_of.end() && producer->second > at;
      };
      for (const ir::Value* v : node->inputs)
        if (reads_later(v)) return nullptr;
      for (const ir::Value* v : node->implicit_inputs)
        if (reads_later(v)) return nullptr;
    }
    return &p.result;
  }
  return nullptr;
}

// Places the runtime nodes with the partitioner (or as a context binary stored them): one step
// per partition (consecutive nodes of one backend, in graph order); the report goes into the
// plan.

Status place_partitioned(const ir::Graph& graph, const std::vector<const ir::Node*>& runtime_nodes,
                         const PlanOptions& options, const backends::PlanView& type_of, partition::BackendPool& pool,
                         Plan& plan) {
  partition::PartitionRequest req;
  req.graph = &graph;
  req.nodes = runtime_nodes;
  req.type_of = type_of;
  const Plan* p = &plan;
  req.is_constant = [p](const ir::Value* v) {
    auto it = p->slot_of.find(v);
    return v->constant.has_value() || (it != p->slot_of.end() && p->values[static_cast<size_t>(it->second)].known_value);
  };
  req.backend = options.backend;
  req.options = options.partition;
  req.threads = options.threads;
  if (options.partition.device_profile.empty()) {
    req.profile = backends::default_device_profile();
  } else {
    NFUSE_ASSIGN_OR_RETURN(req.profile, backends::load_device_profile(options.partition.device_profile));
  }
  partition::PartitionResult result;
  const partition::PartitionResult* stored = stored_placement(runtime_nodes, options, type_of, pool, plan);
  if (stored) {
    result = *stored;
    result.from_binary = true;
  } else {
    NFUSE_ASSIGN_OR_RETURN(result, partition::partition_nodes(req, pool));
  }
  for (const partition::PartitionInfo& part : result.partitions) {
    Step step;
    step.partition.backend = part.backend;
    step.partition.nodes = part.nodes;
    plan.steps.push_back(std::move(step));
  }
  plan.partition_report = std::make_shared<const partition::PartitionResult>(std::move(result));
  return ok_status();
}

}  // namespace

namespace {

// build_plan's first stage: slots, concrete types and plan-time values; `runtime_nodes` gets the
// nodes left to run.
Status propagate_plan_into(const ir::Graph& graph, const std::map<std::string, std::vector<int64_t>>& input_dims,
                           Plan& plan, std::vector<const ir::Node*>* runtime_nodes) {
  plan.values.reserve(graph.values().size());
  plan.folded.reserve(graph.values().size());
  plan.slot_of.reserve(graph.values().size());
  for (const auto& v : graph.values())
    if (v->constant) slot_for(plan, v.get());
  for (const ir::Value* in : graph.inputs()) {
    int s = slot_for(plan, in);
    plan.input_slots.push_back(s);
    auto it = input_dims.find(in->name);
    if (it == input_dims.end()) return invalid_argument("no shape given for input '" + in->name + "'");
    plan.values[static_cast<size_t>(s)].type = {in->type.dtype, ir::Shape::from_dims(it->second)};
    plan.values[static_cast<size_t>(s)].known_value = false;
  }
  NFUSE_RETURN_IF_ERROR(propagate(graph, plan, runtime_nodes), "planning graph '" + graph.name + "'");
  for (const ir::Value* out : graph.outputs()) plan.output_slots.push_back(slot_for(plan, out));
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<Plan>> propagate_plan(const ir::Graph& graph,
                                             const std::map<std::string, std::vector<int64_t>>& input_dims) {
  auto plan = std::make_unique<Plan>();
  std::vector<const ir::Node*> runtime_nodes;
  NFUSE_RETURN_IF_ERROR_PLAIN(propagate_plan_into(graph, input_dims, *plan, &runtime_nodes));
  return plan;
}

Result<std::unique_ptr<Plan>> build_plan(const ir::Graph& graph,
                                         const std::map<std::string, std::vector<int64_t>>& input_dims,
                                         const PlanOptions& options) {
  auto plan = std::make_unique<Plan>();
  std::vector<const ir::Node*> runtime_nodes;
  NFUSE_RETURN_IF_ERROR_PLAIN(propagate_plan_into(graph, input_dims, *plan, &runtime_nodes));

  backends::CompileContext cc;
  cc.graph = &graph;
  cc.threads = options.threads;
  cc.tile_rows = options.tile_rows;
  cc.run_subgraph = options.run_subgraph;
  cc.packs = options.packs;
  const size_t threads = static_cast<size_t>(std::max(1, options.threads));
  cc.pool = options.workers && options.workers->threads() == threads ? options.workers
                                                                     : std::make_shared<ThreadPool>(options.threads);
  Plan* p = plan.get();
  const StoredLayout* layout = stored_layout(options, *plan);
  std::unordered_map<const ir::Node*, int> stored_tiles;
  if (layout) {
    for (const auto& [node, rows] : layout->tile_rows) stored_tiles[node] = rows;
    cc.stored_tile_rows = &stored_tiles;
  }
  cc.type_of = p->view(graph);
  cc.slot_of = [p](const ir::Value* v) { return p->slot_of.at(v); };
  // Which values the arena holds is known before compile; where, only once the partitions'
  // scratch needs join the layout afterwards.
  auto request_of_slot = std::make_shared<std::vector<size_t>>();
  cc.is_preallocated = [p, request_of_slot](const ir::Value* v) {
    const size_t slot = static_cast<size_t>(p->slot_of.at(v));
    return (*request_of_slot)[slot] != SIZE_MAX || p->values[slot].known_value;
  };

  // One instance per backend name, shared by the partitioner's questions and every partition
  // of that backend.
  partition::BackendPool pool;
  if (uses_partitioner(options)) {
    NFUSE_RETURN_IF_ERROR(place_partitioned(graph, runtime_nodes, options, cc.type_of, pool, *plan),
                          "partitioning graph '" + graph.name + "'");
  } else {
    NFUSE_ASSIGN_OR_RETURN(backends::Backend * backend, pool.get(options.backend));
    for (const ir::Node* n : runtime_nodes) {
      backends::Support s = backend->supports(*n, cc.type_of);
      if (!s.ok()) return unsupported(n->label() + ": backend '" + options.backend + "' cannot run it: " + s.text());
    }
    // One named backend and no placement options: the whole runtime graph is a single partition.
    if (!runtime_nodes.empty()) {
      Step step;
      step.partition.backend = options.backend;
      step.partition.nodes = runtime_nodes;
      plan->steps.push_back(std::move(step));
    }
  }
  // Backends put their partition's nodes in execution order; tensor lifetimes follow that order.
  std::vector<const ir::Node*> execution_order;
  std::vector<int> lifetime_steps;
  std::vector<bool> views;  // per node in execution order: a Reshape-like node whose buffers may alias
  int next_step = 0;
  std::vector<int> first_lifetime_step;
  for (Step& step : plan->steps) {
    first_lifetime_step.push_back(next_step);
    NFUSE_ASSIGN_OR_RETURN(backends::Backend * backend, pool.get(step.partition.backend));
    backend->reorder(step.partition, cc.type_of);
    const backends::Partition& part = step.partition;
    execution_order.insert(execution_order.end(), part.nodes.begin(), part.nodes.end());
    for (const ir::Node* n : part.nodes) views.push_back(backend->aliases_reshapes() && ops::reorders_no_elements(*n));
    const bool grouped = part.step_of_node.size() == part.nodes.size();
    int last = -1;
    for (size_t i = 0; i < part.nodes.size(); ++i) {
      const int local = grouped ? part.step_of_node[i] : static_cast<int>(i);
      lifetime_steps.push_back(next_step + local);
      last = std::max(last, local);
    }
    next_step += last + 1;
  }
  std::vector<BufferRequest> requests =
      arena_requests(*plan, execution_order, lifetime_steps, views, request_of_slot.get());
  for (Step& step : plan->steps) {
    NFUSE_ASSIGN_OR_RETURN(backends::Backend * backend, pool.get(step.partition.backend));
    NFUSE_ASSIGN_OR_RETURN(step.compiled, backend->compile(step.partition, cc));
  }
  place_arena(*plan, std::move(requests), *request_of_slot, first_lifetime_step, layout);
  return plan;
}

}  // namespace nfuse::compile
