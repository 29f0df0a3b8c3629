// The partitioner's cost model: a roofline per node per backend, from the device profile.
//
//   node_us = max(compute, memory) + 0.5 * min(compute, memory) + step_us
//   compute = flops / peak, memory = sum over tensors of bytes / bandwidth(where it lives)
//   (the two overlap only partly: cost_model.cpp, kOverlapLoss)
//
// * flops: partition::node_flops at the plan's shapes, times the fraction of them the backend's
//   kernels perform (Backend::mac_fraction: the cpu and fusion backends' Winograd layers do
//   2.25x fewer multiplies, by the rule that picks Winograd in their kernels). Peak is the
//   backend's f32, f32-depthwise or int8 figure (by the node's input dtype), times the intra-op
//   threads. Each backend derives its figures from the host's (Backend::cost_profile).
// * bytes: every non-constant input and output tensor (weights and plan-time constants are not
//   charged: they are read once per run whatever the placement, so they cancel between choices).
//   Where a tensor lives decides its bandwidth, by a deliberately simple rule:
//     - on chip (the caller says so: a tensor produced and consumed inside one partition of a
//       backend whose traits say it keeps intermediates on chip, i.e. fusion): L2 bandwidth;
//     - otherwise, a tensor of at most L2 bytes (per core, times threads) is taken to be still in
//       L2 when its consumer runs (it was just written): L2 bandwidth; a larger one goes through
//       DRAM. L3 is not modelled: it would only narrow the gap between the two.
// * A boundary between partitions of different backends costs, per tensor crossing it, the
//   larger of the two backends' boundary_us, plus bytes / DRAM bandwidth when either backend
//   does not share host memory (a device backend's copy).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/device_profile.h"
#include "ir/graph.h"

namespace nfuse::partition {

// True for a tensor that stays in L2 (see above).
using OnChip = std::function<bool(const ir::Value*)>;

struct NodeEstimate {
  double flops = 0.0;      // after the Winograd reduction where it applies
  double bytes = 0.0;      // non-constant tensors read and written
  double compute_us = 0.0;
  double memory_us = 0.0;
  double us = 0.0;         // max(compute, memory) + step overhead
};

class CostModel {
 public:
  // `is_constant`: values known at plan time (weights, folded values): not charged as traffic.
  CostModel(backends::DeviceProfile profile, backends::PlanView type_of,
            std::function<bool(const ir::Value*)> is_constant, int threads);

  // Estimated time of `node` on `backend`; never fails (unknown shapes cost the overhead only).
  NodeEstimate estimate(const ir::Node& node, const std::string& backend, const OnChip& on_chip) const;
  double node_us(const ir::Node& node, const std::string& backend, const OnChip& on_chip) const {
    return estimate(node, backend, on_chip).us;
  }
  // Cost of handing `bytes` of one tensor from a partition of `from` to one of `to` (0 when equal).
  double boundary_us(const std::string& from, const std::string& to, int64_t bytes) const;
  // Bytes of a value's tensor at the plan's shape; 0 when not static.
  int64_t bytes_of(const ir::Value* v) const;
  bool is_constant(const ir::Value* v) const { return is_constant_(v); }
  const backends::DeviceProfile& profile() const { return profile_; }
  const backends::BackendProfile& backend_profile(const std::string& backend) const;
  // The registered backend's traits; none for a name the registry does not know.
  const backends::BackendTraits& backend_traits(const std::string& backend) const;
  int threads() const { return threads_; }

 private:
  // What the model knows of one backend, looked up once: its numbers, its traits, and an
  // instance to ask its cost rules (null for a name the registry does not know).
  struct Costed {
    backends::BackendProfile profile;
    backends::BackendTraits traits;
    std::unique_ptr<backends::Backend> backend;
  };
  const Costed& costed(const std::string& backend) const;
  double peak_gflops(const ir::Node& node, const backends::BackendProfile& p) const;

  backends::DeviceProfile profile_;
  backends::PlanView type_of_;
  std::function<bool(const ir::Value*)> is_constant_;
  int threads_ = 1;
  mutable std::map<std::string, Costed> by_name_;
};

}  // namespace nfuse::partition
