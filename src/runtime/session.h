// Session: a model ready to run. Owns the graph, builds a Plan per input-shape signature
// (cached), binds the arena and runs the plan's steps.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/run_profile.h"
#include "compile/plan.h"
#include "ir/graph.h"
#include "partition/partition_options.h"
#include "passes/pass_manager.h"
#include "runtime/run_stats.h"

namespace nfuse::runtime {

class CompiledSubgraphs;

// The canonical weights a context binary does not check at load because only packing reads them
// and the binary brings their packed twins (ContextModel): a session that may read them
// otherwise asks for the check first. Every call checks at most once per binary.
class DeferredWeights {
 public:
  virtual ~DeferredWeights() = default;
  // Before a plan for `dims` is built: checks them unless the binary was compiled for `dims`.
  virtual Status before_plan(const std::map<std::string, std::vector<int64_t>>& dims) const = 0;
  // After `plan` is built: checks them unless it is a plan of the graph itself (not a
  // shape-specialized copy) whose ops took every packed twin from the binary and packed nothing
  // themselves (`used`: what the plan took from the session's view of the binary's store).
  virtual Status after_plan(const compile::Plan& plan, const backends::PackStore::Usage& used) const = 0;
  // Checks them now (before they are copied elsewhere, e.g. into another binary).
  virtual Status check() const = 0;
};

struct SessionOptions {
  std::string backend = "ref";
  int threads = 1;
  // Graph optimization (passes::optimize: folding, BN folding, activation/residual fusion...),
  // on by default as in ONNX Runtime; off runs the graph exactly as imported.
  bool optimize = true;
  // The graph already went through the optimization passes (a context binary's): create skips
  // them, and everything else behaves as with `optimize`.
  bool graph_optimized = false;
  // Keep only these graph outputs (and what they need); empty keeps all.
  std::vector<std::string> outputs;
  // Placement: pins, preferences and denials; the partitioner's inputs for backend "auto".
  partition::PartitionOptions partition;
  // Output rows per strip of the fusion backend's groups; 0: its cost model chooses.
  int tile_rows = 0;
  // Intra-op workers of `threads` shared with other sessions (a runtime's); null: each plan
  // makes its own.
  std::shared_ptr<ThreadPool> workers;
  // Prepacked weights for the plans of this graph (not its control-flow bodies or shape-
  // specialized copies, whose value names may mean other tensors): a context binary's, or a
  // recording store when the session is compiled into one. Null: each op packs its own.
  std::shared_ptr<backends::PackStore> packs;
  // Placements a context binary stores for this graph (ContextModel::graph(SessionOptions*)).
  std::shared_ptr<const std::vector<compile::StoredPlacement>> placements;
  // Layouts (strip heights, arena offsets) a context binary stores for this graph.
  std::shared_ptr<const std::vector<compile::StoredLayout>> layouts;
  // A context binary's weights checked on demand (above); null for every other model.
  std::shared_ptr<const DeferredWeights> deferred;
};

using NamedTensors = std::vector<std::pair<std::string, ir::Tensor>>;

// What a run with bound outputs copied instead of writing in place (zero-copy I/O), and why.
struct RunCopies {
  uint64_t input_bytes = 0;   // inputs are read in place: 0 unless that changes
  uint64_t output_bytes = 0;  // bound outputs the run could not write in place, copied after it
  std::vector<std::pair<std::string, std::string>> reasons;  // output name -> why it was copied
};

// A run in progress on one session, advanced one unit at a time (runtime/executor.h interleaves
// the runs of many sessions at unit boundaries). Session::run is start_run, next_unit until it
// says done, finish_run. Between start_run and finish_run (or cancel_run) the session runs
// nothing else, and the inputs and bound outputs must stay alive.
class RunCursor {
 public:
  RunCursor() = default;
  RunCursor(const RunCursor&) = delete;
  RunCursor& operator=(const RunCursor&) = delete;
  bool active() const { return prepared_ != nullptr; }
  bool done() const { return active() && step_ >= steps_; }

 private:
  friend class Session;
  void* prepared_ = nullptr;  // Session::Prepared of the running plan
  size_t step_ = 0, unit_ = 0, steps_ = 0;
  std::chrono::steady_clock::time_point started_, step_started_;
  double cpu_started_ = 0.0;
  backends::RunProfile* profile_ = nullptr;
  const std::vector<ir::Tensor*>* bound_outputs_ = nullptr;
  RunCopies* copies_ = nullptr;
  std::vector<std::string> refusals_;  // sized only for a bound run
};

class Session {
 public:
  // Takes ownership of a verified graph; kNotFound for an unknown backend.
  static Result<std::unique_ptr<Session>> create(std::unique_ptr<ir::Graph> graph, SessionOptions options);

  const ir::Graph& graph() const { return *graph_; }
  // The graph `plan` runs: graph(), or the copy specialized to the plan's input shapes (an If
  // the shapes decide, folded to its branch: runtime/shape_specialization.h).
  const ir::Graph& planned_graph(const compile::Plan& plan) const {
    return plan.specialized_graph ? *plan.specialized_graph : *graph_;
  }
  const SessionOptions& options() const { return options_; }
  // What the optimization passes changed (empty when optimize is off).
  const passes::PassReport& pass_report() const { return pass_report_; }

  // The plan for these input dims (built on first use, then cached).
  Result<const compile::Plan*> prepare(const std::map<std::string, std::vector<int64_t>>& input_dims);
  // Dims of every graph input with symbolic dims replaced by `overrides` or 1.
  std::map<std::string, std::vector<int64_t>> default_input_dims(
      const std::map<std::string, std::vector<int64_t>>& overrides = {}) const;

  // The placement report (partition_report_json) of the plan for these dims. A plan of one named
  // backend without pins or denials skips the partitioner; its report is then the partitioner's
  // answer for the same options (what `nfuse partition` shows).
  Result<std::string> placement_report_json(const std::map<std::string, std::vector<int64_t>>& input_dims,
                                            const std::string& model_label);

  // Runs with inputs by name. Checks names, dtypes and ranks/static dims against the model;
  // returns outputs in graph-output order (owned tensors, valid after later runs).
  // With `profile`, every node's wall time is appended to it (and profile->runs counted).
  Result<std::vector<ir::Tensor>> run(const NamedTensors& inputs, backends::RunProfile* profile = nullptr);
  // As run(), writing output i into *bound_outputs[i] where that is set (caller memory of the
  // output's dtype and dims): in place when it is 64-byte aligned and the op producing the output
  // writes its own buffer, else copied after the run (counted in *copies, with the reason). The
  // returned vector holds the unbound outputs; bound positions are empty tensors.
  Result<std::vector<ir::Tensor>> run_bound(const NamedTensors& inputs, const std::vector<ir::Tensor*>& bound_outputs,
                                            RunCopies* copies, backends::RunProfile* profile = nullptr);

  // The run of run_bound in pieces: start_run checks the inputs, prepares the plan and binds
  // inputs and outputs; next_unit runs one unit of work (true once all have run); finish_run
  // returns the outputs as run_bound does; cancel_run abandons a started run (after an error, or
  // when a scheduler drops it). `bound_outputs` may be null (none bound). Every call is
  // exception-free (allocation failures become kOutOfMemory), and any failure cancels the run.
  Status start_run(const NamedTensors& inputs, const std::vector<ir::Tensor*>* bound_outputs, RunCopies* copies,
                   backends::RunProfile* profile, RunCursor* cursor);
  Result<bool> next_unit(RunCursor& cursor);
  // What the cursor's next unit runs ("cpu: Conv 'x' piece 2/4"), for traces; "" when none.
  std::string next_unit_label(const RunCursor& cursor) const;
  Result<std::vector<ir::Tensor>> finish_run(RunCursor& cursor);
  void cancel_run(RunCursor& cursor);

  // Plans built so far (one per input-shape signature); drop_plans() frees them all, and the
  // next run plans again.
  size_t cached_plans() const { return cache_.size(); }
  // The plan built for these input dims, or null when none was.
  const compile::Plan* cached_plan(const std::map<std::string, std::vector<int64_t>>& input_dims) const;
  // The input dims of every plan built so far (what a context binary records).
  std::vector<std::map<std::string, std::vector<int64_t>>> planned_signatures() const;
  void drop_plans() { cache_.clear(); }
  // What the last successful run executed and cost (RunStats::run is 0 before the first).
  const RunStats& last_run_stats() const { return last_stats_; }

 private:
  Session(std::unique_ptr<ir::Graph> graph, SessionOptions options)
      : graph_(std::move(graph)), options_(std::move(options)) {}
  // The plan options these session options say.
  compile::PlanOptions plan_options() const;
  Status check_input(const ir::Value& expected, const ir::Tensor& got) const;
  Status start_impl(const NamedTensors& inputs, RunCursor& cursor);
  Status unit_impl(RunCursor& cursor);
  Result<std::vector<ir::Tensor>> finish_impl(RunCursor& cursor);
  void record_run(const compile::Plan& plan, const RunStats& base, const RunCopies* copies,
                  std::chrono::steady_clock::time_point started, double cpu_started);

  struct Prepared {
    std::unique_ptr<compile::Plan> plan;
    std::shared_ptr<void> arena;
    std::unique_ptr<backends::ExecContext> ctx;
    std::unique_ptr<RunStats> stats;  // the plan's static part of every run's record (first run)
  };
  Result<Prepared*> prepared_for(const std::map<std::string, std::vector<int64_t>>& input_dims);
  // The plan of graph_ specialized to these dims when they decide one of its Ifs
  // (runtime/shape_specialization.h); null when they decide none, or specializing failed.
  Result<std::unique_ptr<compile::Plan>> specialized_plan(
      const std::map<std::string, std::vector<int64_t>>& input_dims);

  std::unique_ptr<ir::Graph> graph_;
  SessionOptions options_;
  uint64_t runs_ = 0;
  RunStats last_stats_;
  std::vector<double> step_ms_;  // the running plan's step times
  // The If/Loop/Scan bodies of graph_, compiled for this session's plans.
  std::shared_ptr<CompiledSubgraphs> subgraphs_;
  std::shared_ptr<const backends::SubgraphRunner> subgraph_runner_;
  passes::PassReport pass_report_;
  std::map<std::map<std::string, std::vector<int64_t>>, Prepared> cache_;
};

}  // namespace nfuse::runtime
