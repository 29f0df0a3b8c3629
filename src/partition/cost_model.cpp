#include "partition/cost_model.h"

#include <algorithm>

#include "partition/node_macs.h"

namespace nfuse::partition {

CostModel::CostModel(backends::DeviceProfile profile, backends::PlanView type_of,
                     std::function<bool(const ir::Value*)> is_constant, int threads)
    : profile_(std::move(profile)),
      type_of_(std::move(type_of)),
      is_constant_(std::move(is_constant)),
      threads_(std::max(1, threads)) {}

const CostModel::Costed& CostModel::costed(const std::string& backend) const {
  auto it = by_name_.find(backend);
  if (it != by_name_.end()) return it->second;
  Costed c;
  c.profile = profile_.for_backend(backend);
  auto instance = backends::BackendRegistry::global().create(backend);
  if (instance.ok()) {
    c.backend = std::move(*instance);
    c.traits = c.backend->traits();
  }
  return by_name_.emplace(backend, std::move(c)).first->second;
}

const backends::BackendProfile& CostModel::backend_profile(const std::string& backend) const {
  return costed(backend).profile;
}

const backends::BackendTraits& CostModel::backend_traits(const std::string& backend) const {
  return costed(backend).traits;
}

int64_t CostModel::bytes_of(const ir::Value* v) const {
  if (!v) return 0;
  const ir::TensorType& t = type_of_(v);
  auto n = t.shape.static_numel();
  if (!n || t.dtype == ir::DType::kUndefined) return 0;
  return *n * static_cast<int64_t>(ir::dtype_size(t.dtype));
}

double CostModel::peak_gflops(const ir::Node& node, const backends::BackendProfile& p) const {
  const ir::Value* x = node.input(0);
  const ir::DType dt = x ? type_of_(x).dtype : ir::DType::kF32;
  if (dt == ir::DType::kI8 || dt == ir::DType::kU8) return p.gflops_int8;
  // Depthwise: one input channel per group, so no reuse across channels for a GEMM to exploit.
  if ((node.op_type == "Conv" || node.op_type == "QLinearConv") && node.attrs.get_int("group", 1) > 1 && node.input(1)) {
    const ir::Shape& w = type_of_(node.op_type == "Conv" ? node.input(1) : node.input(3)).shape;
    if (w.rank_known() && w.rank() >= 2 && w[1].is_static() && w[1].value == 1) return p.gflops_f32_depthwise;
  }
  return p.gflops_f32;
}

namespace {

// Arithmetic and memory traffic overlap, but not completely: a layer streaming its tensors
// through DRAM stalls its arithmetic part of the time even when arithmetic dominates. Measured
// here: a 96 -> 24 channel 3x3 convolution ran 1.33x slower per pixel reading its 22 MB input
// from DRAM than from cache, and ESPCN's three convolutions 1.24x slower layer by layer than as
// one fused group, though both are compute-bound by the roofline. The shorter of the two
// times is charged at this fraction.
constexpr double kOverlapLoss = 0.5;

}  // namespace

NodeEstimate CostModel::estimate(const ir::Node& node, const std::string& backend, const OnChip& on_chip) const {
  const Costed& c = costed(backend);
  const backends::BackendProfile& p = c.profile;
  NodeEstimate e;
  e.flops = node_flops(node, type_of_);
  if (c.backend) e.flops *= c.backend->mac_fraction(node, type_of_);
  const double threads = static_cast<double>(threads_);
  // GFLOP/s = 1e3 flops per microsecond.
  e.compute_us = e.flops / (std::max(peak_gflops(node, p), 1e-6) * threads * 1e3);
  const double l2_fit = static_cast<double>(p.l2_bytes) * threads;
  auto charge = [&](const ir::Value* v) {
    if (!v || is_constant_(v)) return;
    const double bytes = static_cast<double>(bytes_of(v));
    e.bytes += bytes;
    // L2 bandwidth is per core; DRAM bandwidth is the socket's, shared by the threads.
    const bool in_l2 = (on_chip && on_chip(v)) || bytes <= l2_fit;
    const double gbps = in_l2 ? p.l2_gbps * threads : p.dram_gbps;
    e.memory_us += bytes / (std::max(gbps, 1e-6) * 1e3);  // GB/s = 1e3 bytes per microsecond
  };
  for (const ir::Value* v : node.inputs) charge(v);
  for (const ir::Value* v : node.implicit_inputs) charge(v);
  for (const ir::Value* v : node.outputs) charge(v);
  e.us = std::max(e.compute_us, e.memory_us) + kOverlapLoss * std::min(e.compute_us, e.memory_us) + p.step_us;
  return e;
}

double CostModel::boundary_us(const std::string& from, const std::string& to, int64_t bytes) const {
  if (from == to) return 0.0;
  const backends::BackendProfile& a = backend_profile(from);
  const backends::BackendProfile& b = backend_profile(to);
  double us = std::max(a.boundary_us, b.boundary_us);
  if (!a.host_shared || !b.host_shared) {
    us += static_cast<double>(bytes) / (std::max(std::min(a.dram_gbps, b.dram_gbps), 1e-6) * 1e3);
  }
  return us;
}

}  // namespace nfuse::partition
