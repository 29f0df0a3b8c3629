// The backend interface. A backend answers, per node, whether it can run it (and why not),
// and compiles a partition of nodes into something runnable. Adding a backend touches its own
// folder and one registration line (NFUSE_BUILTIN_BACKENDS in src/backends/CMakeLists.txt; an
// application's own backend: BackendRegistry::global().add).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/device_profile.h"
#include "backends/pack_store.h"
#include "backends/run_profile.h"
#include "backends/subgraph_runner.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::backends {

// How a backend would run a node.
enum class SupportKind {
  kNative,           // on its own kernels
  kReferenceKernel,  // accepted, but run on the reference kernel (reports name such nodes)
  kNo,               // not at all; the reason and detail say why
};

// Why a node does not run on a backend: a backend's answer (unsupported op, dtype, rank,
// dynamic shape), or the partitioner's reason for placing it elsewhere (cost, pinned, denied).
enum class SupportReason { kNone, kUnsupportedOp, kDtype, kDynamicShape, kRank, kCost, kPinned, kDenied };
// "unsupported op", "dtype", "dynamic shape", "rank != 4", "cost", "pinned", "denied" ("" for kNone).
const char* support_reason_name(SupportReason reason);

// The answer to "can you run this node": the kind, for kNo a reason and a detail naming what
// (a value, an attribute, a dtype), for kReferenceKernel why no optimized kernel applies; cost
// in microseconds.
struct Support {
  SupportKind kind = SupportKind::kNo;
  SupportReason reason = SupportReason::kNone;
  std::string detail;
  double cost_us = 0.0;

  bool ok() const { return kind != SupportKind::kNo; }
  // "<reason>: <detail>" for kNo, the detail otherwise.
  std::string text() const;

  static Support native(double cost_us = 0.0) {
    return Support{SupportKind::kNative, SupportReason::kNone, "", cost_us};
  }
  static Support reference_kernel(std::string why) {
    return Support{SupportKind::kReferenceKernel, SupportReason::kNone, std::move(why), 0.0};
  }
  static Support no(SupportReason reason, std::string detail) {
    return Support{SupportKind::kNo, reason, std::move(detail), 0.0};
  }
};

// What a backend may know of the plan it is asked about: the graph, and each value's type
// specialised to the plan's input-shape signature (more concrete than value->type when the model
// has symbolic dims). Without a plan (a bare graph) the values' own types. Small and copyable:
// a graph pointer and a lookup function pointer over the plan's table, no closure.
class PlanView {
 public:
  // Returns the plan's type of `v`, or null to use v->type.
  using TypeLookup = const ir::TensorType* (*)(const void* context, const ir::Value* v);

  PlanView() = default;
  explicit PlanView(const ir::Graph& graph) : graph_(&graph) {}
  PlanView(const ir::Graph& graph, const void* context, TypeLookup lookup)
      : graph_(&graph), context_(context), lookup_(lookup) {}

  // The graph the nodes belong to; null only for a default-constructed view.
  const ir::Graph* graph() const { return graph_; }
  const ir::TensorType& type(const ir::Value* v) const {
    if (lookup_) {
      if (const ir::TensorType* t = lookup_(context_, v)) return *t;
    }
    return v->type;
  }
  const ir::TensorType& operator()(const ir::Value* v) const { return type(v); }

 private:
  const ir::Graph* graph_ = nullptr;
  const void* context_ = nullptr;
  TypeLookup lookup_ = nullptr;
};

// Tensors of one run, one slot per value of the plan. Slots of arena-planned values are bound
// once at prepare time; the rest are filled as the run goes.
class ExecContext {
 public:
  explicit ExecContext(size_t num_slots) : slots_(num_slots) {}
  ir::Tensor& slot(int id) { return slots_[static_cast<size_t>(id)]; }
  const ir::Tensor& slot(int id) const { return slots_[static_cast<size_t>(id)]; }
  size_t num_slots() const { return slots_.size(); }
  int threads = 1;
  // Per-node timings go here while set (Session::run with a profile); backends must check.
  RunProfile* profile = nullptr;

 private:
  std::vector<ir::Tensor> slots_;
};

// What compile() may rely on: where each value lives and what the plan knows of its shape.
struct CompileContext {
  const ir::Graph* graph = nullptr;
  // Slot of every value used by the partition.
  std::function<int(const ir::Value*)> slot_of;
  // True when the value's tensor is bound before the step runs (arena slot, input or constant);
  // false when the step must size and allocate it from the actual inputs.
  std::function<bool(const ir::Value*)> is_preallocated;
  int threads = 1;
  // The plan's concrete types (outside a plan: the values' own).
  PlanView type_of;
  // Output rows per strip of a fused group (fusion backend); 0 lets its cost model choose.
  int tile_rows = 0;
  // The intra-op workers of `threads` that every partition of one plan shares (cpu, fusion):
  // their steps run one after another, so one set of workers serves them all. With a pool per
  // partition, the idle pools' workers kept spinning on the cores the running one needed: the
  // OCR detector under `auto` at 2 threads ran 2x slower than at 1. Null: the backend makes its own.
  std::shared_ptr<ThreadPool> pool;
  // Runs the bodies of If, Loop and Scan nodes compiled on the plan's backends (one plan per
  // body and shape signature). Null: the reference interpreter runs them.
  std::shared_ptr<const SubgraphRunner> run_subgraph;
  // Prepacked weights by key (backends/pack_store.h): served from a context binary, or recorded
  // for one. Null: ops pack their own.
  std::shared_ptr<PackStore> packs;
  // Strip heights a context binary stored for fused groups, by the group's first member
  // (fusion backend); taken as the choice, without the cost model's search. Null: none.
  const std::unordered_map<const ir::Node*, int>* stored_tile_rows = nullptr;
};

// Bytes one run moves to and from the arena (graph inputs, outputs and intermediates; constants
// and weights excluded) as the backend executes its nodes, and as running the same nodes layer
// by layer would. Exact for static shapes: counted from the compiled steps, not estimated.
struct GroupTraffic {
  std::string label;               // e.g. "group 3: Conv_12 .. Conv_14"
  std::vector<std::string> nodes;  // node labels in execution order
  int64_t fused_bytes = 0;
  int64_t layerwise_bytes = 0;
  int tile_rows = 0;               // output rows per strip (0: not tiled)
  const ir::Node* first = nullptr;  // the group's first member (for stored strip heights)
  size_t scratch_bytes = 0;        // per-thread line buffers
};
struct PartitionTraffic {
  bool known = false;  // false: the backend does not count (layer-by-layer by construction)
  int64_t fused_bytes = 0;
  int64_t layerwise_bytes = 0;
  std::vector<GroupTraffic> groups;
};

// A run of consecutive nodes (in graph order) assigned to one backend.
struct Partition {
  std::string backend;
  std::vector<const ir::Node*> nodes;
  // Set by reorder() when the backend runs several nodes at once (a fused group reads its input
  // and writes its output strip by strip, interleaved): nodes with the same number execute
  // together, so the arena must keep every tensor they touch live across all of them. Empty:
  // one node after another.
  std::vector<int> step_of_node;
};

// Working memory one lifetime step of a compiled partition needs beyond its tensors (GEMM
// workspaces, im2col matrices, products), known at compile time for static shapes.
struct ScratchNeed {
  int step = 0;      // the partition's own lifetime step (Partition::step_of_node, else node index)
  size_t bytes = 0;  // a multiple of 64
};

class CompiledPartition {
 public:
  virtual ~CompiledPartition() = default;
  // The planner places every need in the arena beside the tensors, live during its step only
  // (so it reuses the space of tensors dead by then, as TFLite's scratch buffers do), and once
  // the arena exists hands each need its address (64-byte aligned), in the order given. A
  // partition that gets no address, or whose need grows at run time (dynamic shapes), uses
  // memory of its own.
  virtual std::vector<ScratchNeed> scratch_needs() const { return {}; }
  virtual void bind_scratch(const std::vector<uint8_t*>& addresses) { (void)addresses; }
  // Runs the partition's nodes; inputs are read from and outputs written to `ctx` slots.
  // Fails only on what prepare could not check (data-dependent errors).
  virtual Status run(ExecContext& ctx) = 0;
  // The pre-emption points of a run: running units 0 .. units() - 1 in order is run(), and a
  // scheduler may run other sessions' work between two units (an op of cpu, a fused group of
  // fusion). A partition that does not split is one unit, run().
  virtual size_t units() const { return 1; }
  virtual Status run_unit(ExecContext& ctx, size_t unit) {
    (void)unit;
    return run(ctx);
  }
  // What a unit runs, for traces: a node, a fused group, a piece of one.
  virtual std::string unit_label(size_t unit) const { return "unit " + std::to_string(unit); }
  // Labels of the nodes this partition runs on reference kernels instead of its own optimized
  // ones, in execution order; reports show them so no speed is claimed that was not delivered.
  virtual std::vector<std::string> reference_nodes() const { return {}; }
  // Arena traffic of one run of this partition (see PartitionTraffic).
  virtual PartitionTraffic traffic() const { return {}; }
  // The intra-op workers this partition runs on (CompileContext::pool), or null when it has
  // none; a plan's partitions share one.
  virtual const ThreadPool* intra_op_pool() const { return nullptr; }

 protected:
  // run() of a partition that splits into units.
  Status run_units(ExecContext& ctx) {
    for (size_t u = 0; u < units(); ++u) NFUSE_RETURN_IF_ERROR_PLAIN(run_unit(ctx, u));
    return ok_status();
  }
};

// What a backend is, for the partitioner and the plan (which never compare backend names).
struct BackendTraits {
  // The oracle: runs every op the IR accepts on plain kernels; the last resort of placement and
  // what reports do not count as a fallback to reference kernels (its kernels are its own).
  bool is_reference = false;
  // Runs any op and shape on optimized kernels: the fallback of a named backend that takes only
  // some ops, and a backend that needs no partitioner when named alone.
  bool is_general_fallback = false;
  // Runs chains of ops depth-first: tensors produced and consumed inside one of its partitions
  // stay in L2 (fusion). The cost model charges them at L2 bandwidth, and the partitioner
  // clusters chains that graph order interleaves so that one partition runs them.
  bool keeps_intermediates_on_chip = false;
  // Position in the default preference order of `auto` (higher first); 0: not in it.
  int auto_priority = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Stable lower-case name used on the command line ("ref", "cpu", "fusion").
  virtual std::string_view name() const = 0;
  // What this backend is (constant for a backend type).
  virtual BackendTraits traits() const = 0;
  // Whether (and how) this backend can run `node` with the plan's types; never fails.
  virtual Support supports(const ir::Node& node, const PlanView& plan) const = 0;
  // The cost model's roofline numbers for this backend, given the host CPU's (`host`: measured
  // by `nfuse device-profile`, or the built-in defaults). A device profile file that lists the
  // backend overrides them. Default: the host's numbers, for a backend running on its cores.
  virtual BackendProfile cost_profile(const BackendProfile& host) const {
    BackendProfile p = host;
    p.backend = std::string(name());
    return p;
  }
  // The fraction of `node`'s multiply-adds this backend's kernels perform (the cpu backend's
  // Winograd layers do fewer); the cost model scales the node's flops by it. Default: all.
  virtual double mac_fraction(const ir::Node& node, const PlanView& plan) const {
    (void)node;
    (void)plan;
    return 1.0;
  }
  // Puts the partition's nodes into the order this backend will execute them (a topological
  // order of the same nodes); the plan derives tensor lifetimes from it, so it is called before
  // the arena is planned. The fusion backend makes each fused group's members consecutive.
  virtual void reorder(Partition& partition, const PlanView& plan) const {
    (void)partition;
    (void)plan;
  }
  // Nodes of `partition` this backend can run but would run no faster than the fallback, each
  // with the reason (the fusion backend: groups with nothing to keep in cache). The partitioner
  // gives them to the fallback under "auto". Default: none.
  struct Refusal {
    const ir::Node* node = nullptr;
    std::string reason;
  };
  virtual std::vector<Refusal> refuse(const Partition& partition, const PlanView& plan) const {
    (void)partition;
    (void)plan;
    return {};
  }
  // Whether this backend's Reshape, Flatten, Squeeze and Unsqueeze accept an output that already
  // holds their input (same memory: they then copy nothing). The plan gives such a node's input
  // and output one arena buffer.
  virtual bool aliases_reshapes() const { return false; }
  // Turns a partition of supported nodes into a runnable object; kUnsupported names the node.
  virtual Result<std::unique_ptr<CompiledPartition>> compile(const Partition& partition,
                                                             const CompileContext& ctx) = 0;
};

using BackendFactory = std::unique_ptr<Backend> (*)();

class BackendRegistry {
 public:
  static BackendRegistry& global();
  bool add(std::string name, BackendFactory factory);
  // A new instance of the named backend; kNotFound listing the known names.
  Result<std::unique_ptr<Backend>> create(const std::string& name) const;
  std::vector<std::string> names() const;
  // The traits of a registered backend; kNotFound for an unknown name.
  Result<BackendTraits> traits(const std::string& name) const;
  // The registered backend with is_reference (empty when none is registered).
  std::string reference() const;
  // The registered backend with is_general_fallback (empty when none is registered).
  std::string general_fallback() const;
  // The backends with auto_priority > 0, highest first (ties by name): `auto`'s default order.
  std::vector<std::string> auto_order() const;

 private:
  // Traits are asked of a throwaway instance on first use, not at registration: a backend's
  // constructor may read registries that static initialisation has not filled yet.
  const BackendTraits& traits_of(const std::string& name) const;  // name must be registered
  std::string first_with(bool BackendTraits::*flag) const;
  std::unordered_map<std::string, BackendFactory> factories_;
  mutable std::mutex traits_mutex_;
  mutable std::unordered_map<std::string, BackendTraits> traits_;
};

}  // namespace nfuse::backends

#define NFUSE_REGISTER_BACKEND(name, factory)                                        \
  [[maybe_unused]] static const bool NFUSE_CONCAT_(nfuse_backend_registered_, __COUNTER__) = \
      ::nfuse::backends::BackendRegistry::global().add(name, factory)
