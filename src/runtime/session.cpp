#include "runtime/session.h"

#include <chrono>

#include "backends/ref/interpreter.h"
#include "partition/partition_report.h"
#include "runtime/arena_memory.h"
#include "runtime/compiled_subgraphs.h"
#include "runtime/shape_specialization.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace nfuse::runtime {

Result<std::unique_ptr<Session>> Session::create(std::unique_ptr<ir::Graph> graph, SessionOptions options) {
  if (!graph) return invalid_argument("no graph");
  // "auto" is the partitioner, not a backend; every name the placement options mention must exist
  // (caught here, before optimizing, rather than at the first run).
  std::vector<std::string> backend_names = options.partition.prefer;
  if (options.backend != "auto") backend_names.push_back(options.backend);
  for (const auto& [key, name] : options.partition.pins) backend_names.push_back(name);
  for (const std::string& name : backend_names) {
    NFUSE_ASSIGN_OR_RETURN(auto backend, backends::BackendRegistry::global().create(name));
    (void)backend;
  }
  if (options.threads < 1) return invalid_argument("threads must be >= 1");
  // One set of intra-op workers for all of this session's plans and its control-flow bodies'.
  if (!options.workers || options.workers->threads() != static_cast<size_t>(options.threads)) {
    options.workers = std::make_shared<ThreadPool>(options.threads);
  }
  passes::PassReport report;
  const bool run_passes = options.optimize && !options.graph_optimized;
  if (run_passes || !options.outputs.empty()) {
    passes::OptimizeOptions po;
    po.evaluator = backends::ref::node_evaluator();
    po.outputs = options.outputs;
    if (!run_passes) {  // only the output filter
      for (const std::string& name : passes::pass_names())
        if (name != "eliminate_dead_code") po.disabled.push_back(name);
    }
    try {
      NFUSE_ASSIGN_OR_RETURN(report, passes::optimize(*graph, po));
    } catch (const std::bad_alloc&) {
      return out_of_memory("optimizing '" + graph->name + "': out of memory");
    }
  }
  auto session = std::unique_ptr<Session>(new Session(std::move(graph), std::move(options)));
  session->pass_report_ = std::move(report);
  session->subgraphs_ = std::make_shared<CompiledSubgraphs>(session->options_);
  session->subgraph_runner_ = make_subgraph_runner(session->subgraphs_);
  return session;
}

std::vector<std::map<std::string, std::vector<int64_t>>> Session::planned_signatures() const {
  std::vector<std::map<std::string, std::vector<int64_t>>> out;
  for (const auto& [dims, prepared] : cache_) out.push_back(dims);
  return out;
}

std::map<std::string, std::vector<int64_t>> Session::default_input_dims(
    const std::map<std::string, std::vector<int64_t>>& overrides) const {
  std::map<std::string, std::vector<int64_t>> dims;
  for (const ir::Value* in : graph_->inputs()) {
    auto it = overrides.find(in->name);
    if (it != overrides.end()) {
      dims[in->name] = it->second;
      continue;
    }
    std::vector<int64_t> d;
    for (const ir::Dim& dim : in->type.shape.dims()) d.push_back(dim.is_static() ? dim.value : 1);
    dims[in->name] = d;
  }
  return dims;
}

compile::PlanOptions Session::plan_options() const {
  compile::PlanOptions po;
  po.backend = options_.backend;
  po.threads = options_.threads;
  po.partition = options_.partition;
  po.tile_rows = options_.tile_rows;
  po.workers = options_.workers;
  po.run_subgraph = subgraph_runner_;
  po.packs = options_.packs;
  po.placements = options_.placements;
  po.layouts = options_.layouts;
  return po;
}

const compile::Plan* Session::cached_plan(const std::map<std::string, std::vector<int64_t>>& input_dims) const {
  auto it = cache_.find(input_dims);
  return it == cache_.end() ? nullptr : it->second.plan.get();
}

Result<std::unique_ptr<compile::Plan>> Session::specialized_plan(
    const std::map<std::string, std::vector<int64_t>>& input_dims) {
  if (!options_.optimize || !has_top_level_if(*graph_)) return std::unique_ptr<compile::Plan>();
  NFUSE_ASSIGN_OR_RETURN(auto types, compile::propagate_plan(*graph_, input_dims));
  if (!plan_decides_an_if(*graph_, *types)) return std::unique_ptr<compile::Plan>();
  passes::PassReport changes;
  Result<std::unique_ptr<ir::Graph>> specialized = specialize_to_shapes(*graph_, input_dims, &changes);
  if (!specialized.ok()) return std::unique_ptr<compile::Plan>();  // the If's compiled branch runs instead
  std::shared_ptr<const ir::Graph> g = std::move(*specialized);
  // Its bodies are copies of graph_'s: compiled by a runner of their own, which lives with the plan.
  auto subgraphs = std::make_shared<CompiledSubgraphs>(options_);
  compile::PlanOptions po = plan_options();
  po.packs = nullptr;  // another graph: its value names may mean other tensors
  po.placements = nullptr;
  po.layouts = nullptr;
  po.run_subgraph = make_subgraph_runner(subgraphs);
  NFUSE_ASSIGN_OR_RETURN(auto plan, compile::build_plan(*g, input_dims, po));
  plan->specialized_graph = std::move(g);
  plan->specialization_changes = changes.lines();
  plan->specialized_subgraphs = std::move(subgraphs);
  return plan;
}

Result<Session::Prepared*> Session::prepared_for(const std::map<std::string, std::vector<int64_t>>& input_dims) {
  auto it = cache_.find(input_dims);
  if (it != cache_.end()) return &it->second;
  if (options_.deferred) {
    NFUSE_RETURN_IF_ERROR_PLAIN(options_.deferred->before_plan(input_dims));
    if (options_.packs) options_.packs->take_usage();  // what this plan takes starts here
  }
  NFUSE_ASSIGN_OR_RETURN(std::unique_ptr<compile::Plan> plan, specialized_plan(input_dims));
  if (!plan) {
    NFUSE_ASSIGN_OR_RETURN(plan, compile::build_plan(*graph_, input_dims, plan_options()));
  }
  if (options_.deferred) {
    NFUSE_RETURN_IF_ERROR_PLAIN(options_.packs ? options_.deferred->after_plan(*plan, options_.packs->take_usage())
                                               : options_.deferred->check());
  }
  Prepared p;
  const size_t arena_bytes = plan->memory.arena_bytes;
  p.arena = allocate_arena(arena_bytes);
  if (arena_bytes && !p.arena) return out_of_memory("arena of " + std::to_string(arena_bytes) + " bytes");
  void* mem = p.arena.get();
  if (mem && arena_poison_enabled()) std::memset(mem, 0xFF, (arena_bytes + 63) / 64 * 64);
  p.ctx = std::make_unique<backends::ExecContext>(plan->values.size());
  p.ctx->threads = options_.threads;
  auto* base = static_cast<uint8_t*>(mem);
  for (size_t s = 0; s < plan->values.size(); ++s) {
    const compile::PlannedValue& pv = plan->values[s];
    if (pv.known_value) {
      p.ctx->slot(static_cast<int>(s)) = plan->folded[s];
    } else if (pv.arena_offset >= 0) {
      p.ctx->slot(static_cast<int>(s)) =
          ir::Tensor::borrow(pv.type.dtype, *pv.type.shape.static_dims(), base + pv.arena_offset, p.arena);
    }
  }
  for (compile::Step& step : plan->steps) {
    std::vector<uint8_t*> addresses;
    for (size_t offset : step.scratch_offsets) addresses.push_back(base + offset);
    if (!addresses.empty()) step.compiled->bind_scratch(addresses);
  }
  p.plan = std::move(plan);
  auto [pos, inserted] = cache_.emplace(input_dims, std::move(p));
  return &pos->second;
}

Result<const compile::Plan*> Session::prepare(const std::map<std::string, std::vector<int64_t>>& input_dims) {
  try {
    NFUSE_ASSIGN_OR_RETURN(Prepared * p, prepared_for(input_dims));
    return static_cast<const compile::Plan*>(p->plan.get());
  } catch (const std::bad_alloc&) {
    return out_of_memory("planning '" + graph_->name + "': out of memory");
  }
}

Result<std::string> Session::placement_report_json(const std::map<std::string, std::vector<int64_t>>& input_dims,
                                                   const std::string& model_label) {
  NFUSE_ASSIGN_OR_RETURN(const compile::Plan* plan, prepare(input_dims));
  if (plan->partition_report) return partition::partition_report_json(*plan->partition_report, model_label);
  compile::PlanOptions po = plan_options();
  po.partition.always_partition = true;
  try {
    NFUSE_ASSIGN_OR_RETURN(auto partitioned, compile::build_plan(planned_graph(*plan), input_dims, po));
    if (!partitioned->partition_report) return internal_error("the plan has no partition report");
    return partition::partition_report_json(*partitioned->partition_report, model_label);
  } catch (const std::bad_alloc&) {
    return out_of_memory("planning '" + graph_->name + "': out of memory");
  }
}

Status Session::check_input(const ir::Value& expected, const ir::Tensor& got) const {
  if (got.dtype() != expected.type.dtype) {
    return invalid_argument("input '" + expected.name + "' must be " +
                            std::string(ir::dtype_name(expected.type.dtype)) + ", got " +
                            std::string(ir::dtype_name(got.dtype())));
  }
  const ir::Shape& shape = expected.type.shape;
  if (!shape.rank_known()) return ok_status();
  bool match = shape.rank() == got.rank();
  for (int i = 0; match && i < shape.rank(); ++i) {
    if (shape[i].is_static() && shape[i].value != got.dim(i)) match = false;
  }
  if (!match) {
    return invalid_argument("input '" + expected.name + "' must have shape " + shape.to_string() + ", got " +
                            ir::dims_to_string(got.dims()));
  }
  return ok_status();
}

Result<std::vector<ir::Tensor>> Session::run(const NamedTensors& inputs, backends::RunProfile* profile) {
  return run_bound(inputs, {}, nullptr, profile);
}

Result<std::vector<ir::Tensor>> Session::run_bound(const NamedTensors& inputs,
                                                   const std::vector<ir::Tensor*>& bound_outputs, RunCopies* copies,
                                                   backends::RunProfile* profile) {
  RunCursor cursor;
  NFUSE_RETURN_IF_ERROR_PLAIN(
      start_run(inputs, bound_outputs.empty() ? nullptr : &bound_outputs, copies, profile, &cursor));
  for (;;) {
    NFUSE_ASSIGN_OR_RETURN(const bool done, next_unit(cursor));
    if (done) break;
  }
  return finish_run(cursor);
}

namespace {

// Why caller memory bound to an output cannot be written in place by the plan's kernels ("" when it can).
std::string binding_refusal(const compile::PlannedValue& planned, const ir::Tensor& target) {
  if (reinterpret_cast<uintptr_t>(target.raw()) % 64 != 0) return "the buffer is not 64-byte aligned";
  if (planned.known_value) return "the output is a constant folded at plan time";
  if (planned.value->is_graph_input) return "the output is a graph input";
  if (target.dtype() != planned.type.dtype)
    return "the buffer is " + std::string(ir::dtype_name(target.dtype())) + ", the output " +
           std::string(ir::dtype_name(planned.type.dtype));
  auto dims = planned.type.shape.static_dims();
  if (!dims || *dims != target.dims())
    return "the buffer's dims " + ir::dims_to_string(target.dims()) + " are not the planned " +
           planned.type.shape.to_string();
  return "";
}

// No exception crosses the API: an allocation failure deep in a kernel becomes kOutOfMemory,
// and a failed piece of a run cancels it.
template <typename F>
auto guarded(Session& session, RunCursor& cursor, F&& body) -> decltype(body()) {
  try {
    auto result = body();
    if (!result.ok()) session.cancel_run(cursor);
    return result;
  } catch (const std::bad_alloc&) {
    session.cancel_run(cursor);
    return out_of_memory("running '" + session.graph().name + "': out of memory");
  } catch (const std::exception& e) {
    session.cancel_run(cursor);
    return internal_error("running '" + session.graph().name + "': " + e.what());
  }
}

// The calling thread's worker-span recorder for one unit of a profiled run, restored after it.
class RecorderScope {
 public:
  explicit RecorderScope(backends::RunProfile* profile)
      : outer_(set_worker_span_recorder(profile ? &profile->workers : worker_span_recorder())) {}
  ~RecorderScope() { set_worker_span_recorder(outer_); }
  RecorderScope(const RecorderScope&) = delete;
  RecorderScope& operator=(const RecorderScope&) = delete;

 private:
  WorkerSpanRecorder* outer_;
};

}  // namespace

Status Session::start_run(const NamedTensors& inputs, const std::vector<ir::Tensor*>* bound_outputs, RunCopies* copies,
                          backends::RunProfile* profile, RunCursor* cursor) {
  if (!cursor) return invalid_argument("no run cursor");
  if (cursor->active()) return invalid_argument("the run cursor holds a run that was not finished");
  if (bound_outputs && bound_outputs->size() != graph_->outputs().size())
    return invalid_argument("bound outputs: " + std::to_string(bound_outputs->size()) + " given for " +
                            std::to_string(graph_->outputs().size()) + " outputs");
  cursor->profile_ = profile;
  cursor->bound_outputs_ = bound_outputs;
  cursor->copies_ = copies;
  return guarded(*this, *cursor, [&] { return start_impl(inputs, *cursor); });
}

Result<bool> Session::next_unit(RunCursor& cursor) {
  if (!cursor.active()) return invalid_argument("no run was started on this cursor");
  NFUSE_RETURN_IF_ERROR_PLAIN(guarded(*this, cursor, [&] { return unit_impl(cursor); }));
  return cursor.done();
}

std::string Session::next_unit_label(const RunCursor& cursor) const {
  const auto* p = static_cast<const Prepared*>(cursor.prepared_);
  if (!p || cursor.done()) return "";
  const compile::Step& step = p->plan->steps[cursor.step_];
  return step.partition.backend + ": " + step.compiled->unit_label(cursor.unit_);
}

Result<std::vector<ir::Tensor>> Session::finish_run(RunCursor& cursor) {
  if (!cursor.active()) return invalid_argument("no run was started on this cursor");
  if (!cursor.done()) return invalid_argument("the run has units left to run");
  return guarded(*this, cursor, [&] { return finish_impl(cursor); });
}

void Session::cancel_run(RunCursor& cursor) {
  auto* p = static_cast<Prepared*>(cursor.prepared_);
  if (!p) return;
  const compile::Plan& plan = *p->plan;
  p->ctx->profile = nullptr;  // a failed run must not leave the caller's profile attached
  // A binding lasts one run: the next must not write into memory it no longer owns.
  if (cursor.bound_outputs_)
    for (size_t i = 0; i < plan.output_slots.size(); ++i)
      if ((*cursor.bound_outputs_)[i] && p->ctx->slot(plan.output_slots[i]).bound_output())
        p->ctx->slot(plan.output_slots[i]) = ir::Tensor();
  for (int s : plan.input_slots) p->ctx->slot(s) = ir::Tensor();  // drop the caller's input buffers
  cursor.prepared_ = nullptr;
}

Status Session::start_impl(const NamedTensors& inputs, RunCursor& c) {
  c.started_ = std::chrono::steady_clock::now();
  c.cpu_started_ = process_cpu_seconds();
  std::map<std::string, const ir::Tensor*> by_name;
  for (const auto& [name, t] : inputs) {
    if (!graph_->find_value(name) || !graph_->find_value(name)->is_graph_input) {
      return invalid_argument("model has no input named '" + name + "'");
    }
    by_name[name] = &t;
  }
  std::map<std::string, std::vector<int64_t>> dims;
  for (const ir::Value* in : graph_->inputs()) {
    auto it = by_name.find(in->name);
    if (it == by_name.end()) return invalid_argument("input '" + in->name + "' was not given");
    NFUSE_RETURN_IF_ERROR_PLAIN(check_input(*in, *it->second));
    dims[in->name] = it->second->dims();
  }
  NFUSE_ASSIGN_OR_RETURN(Prepared * p, prepared_for(dims));
  const compile::Plan& plan = *p->plan;
  c.prepared_ = p;  // from here on, cancel_run undoes what follows
  for (size_t i = 0; i < graph_->inputs().size(); ++i) {
    p->ctx->slot(plan.input_slots[i]) = *by_name.at(graph_->inputs()[i]->name);
  }
  // Bound outputs the kernels may write in place go into their slots; the rest are copied after.
  c.refusals_.clear();
  if (c.bound_outputs_) {
    c.refusals_.resize(plan.output_slots.size());
    for (size_t i = 0; i < plan.output_slots.size(); ++i) {
      ir::Tensor* target = (*c.bound_outputs_)[i];
      if (!target) continue;
      const int s = plan.output_slots[i];
      c.refusals_[i] = binding_refusal(plan.values[static_cast<size_t>(s)], *target);
      if (c.refusals_[i].empty())
        p->ctx->slot(s) = ir::Tensor::bind_output(target->dtype(), target->dims(), target->raw());
    }
  }
  p->ctx->profile = c.profile_;
  if (!p->stats) p->stats = std::make_unique<RunStats>(plan_run_stats(plan, options_.backend));
  step_ms_.assign(plan.steps.size(), 0.0);
  c.steps_ = plan.steps.size();
  c.step_ = c.unit_ = 0;
  while (c.step_ < c.steps_ && plan.steps[c.step_].compiled->units() == 0) ++c.step_;
  return ok_status();
}

Status Session::unit_impl(RunCursor& c) {
  auto* p = static_cast<Prepared*>(c.prepared_);
  const compile::Plan& plan = *p->plan;
  if (c.done()) return ok_status();
  const compile::Step& step = plan.steps[c.step_];
  RecorderScope recorder(c.profile_);
  const auto t0 = std::chrono::steady_clock::now();
  if (c.unit_ == 0) c.step_started_ = t0;
  NFUSE_RETURN_IF_ERROR(step.compiled->run_unit(*p->ctx, c.unit_),
                        "running on backend '" + step.partition.backend + "'");
  const auto t1 = std::chrono::steady_clock::now();
  step_ms_[c.step_] += std::chrono::duration<double, std::milli>(t1 - t0).count();
  if (++c.unit_ < step.compiled->units()) return ok_status();
  if (c.profile_)  // the partition's span, from its first unit's start to its last unit's end
    c.profile_->partitions.push_back({step.partition.backend, step.partition.nodes.size(),
                                      backends::steady_us(c.step_started_),
                                      std::chrono::duration<double, std::micro>(t1 - c.step_started_).count()});
  c.unit_ = 0;
  ++c.step_;
  while (c.step_ < c.steps_ && plan.steps[c.step_].compiled->units() == 0) ++c.step_;
  return ok_status();
}

Result<std::vector<ir::Tensor>> Session::finish_impl(RunCursor& c) {
  auto* p = static_cast<Prepared*>(c.prepared_);
  const compile::Plan& plan = *p->plan;
  if (c.profile_) {
    ++c.profile_->runs;
    const double start = backends::steady_us(c.started_);
    c.profile_->run_spans.push_back(
        {"", plan.steps.size(), start, backends::steady_us(std::chrono::steady_clock::now()) - start});
  }
  const std::vector<ir::Tensor*>* bound_outputs = c.bound_outputs_;
  std::vector<ir::Tensor> outputs;
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    const int s = plan.output_slots[i];
    const ir::Tensor& t = p->ctx->slot(s);
    ir::Tensor* target = bound_outputs ? (*bound_outputs)[i] : nullptr;
    if (target) {
      outputs.emplace_back();
      if (t.raw() == target->raw() && t.bytes() == target->bytes()) continue;  // written in place
      if (t.dtype() != target->dtype() || t.dims() != target->dims())
        return invalid_argument("bound output '" + graph_->outputs()[i]->name + "' is " +
                                std::string(ir::dtype_name(target->dtype())) + ir::dims_to_string(target->dims()) +
                                " but the run produced " + std::string(ir::dtype_name(t.dtype())) +
                                ir::dims_to_string(t.dims()));
      if (t.bytes() > 0) std::memcpy(target->raw(), t.raw(), t.bytes());
      if (c.copies_) {
        c.copies_->output_bytes += t.bytes();
        c.copies_->reasons.emplace_back(graph_->outputs()[i]->name,
                                        c.refusals_[i].empty() ? "its producer does not write its own buffer (a view, "
                                                                 "a reference-kernel output or a fused group's alias)"
                                                               : c.refusals_[i]);
      }
      continue;
    }
    // Outputs that alias inputs or folded constants are copied so callers own what they get.
    outputs.push_back(t.owns_data() && !plan.values[static_cast<size_t>(s)].known_value &&
                              !plan.values[static_cast<size_t>(s)].value->is_graph_input
                          ? t
                          : t.clone());
  }
  cancel_run(c);  // the run is over: unbind, drop the inputs, detach the profile
  record_run(plan, *p->stats, c.copies_, c.started_, c.cpu_started_);
  return outputs;
}

void Session::record_run(const compile::Plan& plan, const RunStats& base, const RunCopies* copies,
                         std::chrono::steady_clock::time_point started, double cpu_started) {
  last_stats_ = base;
  last_stats_.run = ++runs_;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (BackendRunStats& b : last_stats_.backends)
      if (b.backend == plan.steps[i].partition.backend) b.ms += step_ms_[i];
  if (copies) {
    last_stats_.input_bytes_copied = copies->input_bytes;
    last_stats_.output_bytes_copied = copies->output_bytes;
  }
  last_stats_.cpu_seconds = process_cpu_seconds() - cpu_started;
  last_stats_.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace nfuse::runtime
