// Per-node timings of one or more runs, filled by backends while a profile is attached to the
// ExecContext (Session::run with a RunProfile). Off by default: the cost is two clock reads per
// node, paid only when someone asked.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ir/graph.h"

namespace nfuse::backends {

using nfuse::steady_us;  // core/thread_pool.h

struct NodeTiming {
  const ir::Node* node = nullptr;
  std::string backend;      // the backend that ran it
  bool reference = false;   // ran on its reference kernel (not the backend's optimized one)
  double us = 0.0;          // wall time of this node in this run, nested nodes' time taken off
  double start_us = 0.0;    // when it started (steady_us); 0: no time of its own (a fused member)
  double span_us = 0.0;     // from start to end, nested nodes included (a trace's event)
};

// A run or one partition of it, on the same timeline.
struct SpanTiming {
  std::string backend;  // the partition's backend ("" for a run)
  size_t nodes = 0;     // nodes the partition runs
  double start_us = 0.0, us = 0.0;
};

struct RunProfile {
  // Appended in execution order, one entry per node per unit it ran in (several for a long op's
  // pieces and a fused group's units, which readers sum); runs accumulate until clear().
  std::vector<NodeTiming> nodes;
  std::vector<SpanTiming> partitions, run_spans;
  // What each intra-op worker was busy with (tag: the ir::Node being timed), recorded while a
  // run with this profile is on the calling thread (Session::run).
  WorkerSpanRecorder workers;
  size_t runs = 0;  // complete runs recorded
  void clear() {
    nodes.clear();
    partitions.clear();
    run_spans.clear();
    workers.spans.clear();
    runs = 0;
  }
};

// Times one node into `profile` (when not null) for as long as it lives. The node's entry is
// its own time: the entries of nodes timed while it ran (the body of an If, a Loop or a Scan,
// recorded by the body's own steps) are taken off it, so that a run's entries add up to its
// wall time and each second is counted on the kernel that spent it.
class ScopedNodeTimer {
 public:
  ScopedNodeTimer(RunProfile* profile, const ir::Node* node, const char* backend, bool reference)
      : profile_(profile), node_(node), backend_(backend), reference_(reference) {
    if (!profile_) return;
    first_nested_ = profile_->nodes.size();
    outer_tag_ = profile_->workers.tag;
    profile_->workers.tag = node_;
    start_ = std::chrono::steady_clock::now();
  }
  ~ScopedNodeTimer() {
    if (!profile_) return;
    profile_->workers.tag = outer_tag_;
    const double span = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_).count();
    double us = span;
    for (size_t i = first_nested_; i < profile_->nodes.size(); ++i) us -= profile_->nodes[i].us;
    profile_->nodes.push_back(NodeTiming{node_, backend_, reference_, us < 0 ? 0.0 : us, steady_us(start_), span});
  }
  ScopedNodeTimer(const ScopedNodeTimer&) = delete;
  ScopedNodeTimer& operator=(const ScopedNodeTimer&) = delete;

 private:
  RunProfile* profile_;
  const ir::Node* node_;
  const char* backend_;
  bool reference_;
  size_t first_nested_ = 0;
  const void* outer_tag_ = nullptr;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace nfuse::backends
