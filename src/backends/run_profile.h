// Per-node timings of one or more runs, filled by backends while a profile is attached to the
// ExecContext (Session::run with a RunProfile). Off by default: the cost is two clock reads per
// node, paid only when someone asked.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nfuse::backends {

struct NodeTiming {
  const ir::Node* node = nullptr;
  std::string backend;      // the backend that ran it
  bool reference = false;   // ran on its reference kernel (not the backend's optimized one)
  double us = 0.0;          // wall time of this node in this run
};

struct RunProfile {
  // Appended in execution order, one entry per node per run; runs accumulate until clear().
  std::vector<NodeTiming> nodes;
  size_t runs = 0;  // complete runs recorded
  void clear() {
    nodes.clear();
    runs = 0;
  }
};

// Times one node into `profile` (when not null) for as long as it lives.
class ScopedNodeTimer {
 public:
  ScopedNodeTimer(RunProfile* profile, const ir::Node* node, const char* backend, bool reference)
      : profile_(profile), node_(node), backend_(backend), reference_(reference) {
    if (profile_) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedNodeTimer() {
    if (!profile_) return;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_).count();
    profile_->nodes.push_back(NodeTiming{node_, backend_, reference_, us});
  }
  ScopedNodeTimer(const ScopedNodeTimer&) = delete;
  ScopedNodeTimer& operator=(const ScopedNodeTimer&) = delete;

 private:
  RunProfile* profile_;
  const ir::Node* node_;
  const char* backend_;
  bool reference_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace nfuse::backends
