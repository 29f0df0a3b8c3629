// `nfuse device-profile`: measures the numbers the partitioner's cost model uses (peak compute,
// bandwidths, cache sizes, per-node and per-boundary overheads) and writes them as JSON.
#include <chrono>
#include <cstdio>

#include "backends/device_profile.h"
#include "cli_common.h"
#include "commands.h"

namespace nfuse::cli {
namespace {

constexpr int kChainNodes = 32;

// A chain of kChainNodes Relu on a tiny 4-D tensor: its run time is almost all dispatch.
std::unique_ptr<ir::Graph> relu_chain() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "relu_chain";
  g->opsets[""] = 13;
  const ir::TensorType t{ir::DType::kF32, ir::Shape({ir::Dim(1), ir::Dim(8), ir::Dim(1), ir::Dim(1)})};
  ir::Value* prev = g->add_value("x", t).value();
  g->inputs().push_back(prev);
  for (int i = 0; i < kChainNodes; ++i) {
    ir::Value* next = g->add_value("t" + std::to_string(i), t).value();
    g->add_node("Relu", "relu" + std::to_string(i), {prev}, {next});
    prev = next;
  }
  g->outputs().push_back(prev);
  g->relink();
  return g;
}

// Microseconds per run of the chain under `options`; < 0 when the session cannot be made.
double chain_us(runtime::SessionOptions options) {
  options.optimize = false;  // keep every Relu
  auto session = runtime::Session::create(relu_chain(), std::move(options));
  if (!session.ok()) return -1.0;
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {1, 8, 1, 1});
  for (int i = 0; i < 20; ++i)
    if (!(*session)->run({{"x", x}}).ok()) return -1.0;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) (void)(*session)->run({{"x", x}});
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 100);
  }
  return best;
}

}  // namespace

int cmd_device_profile(const DeviceProfileArgs& args) {
  std::vector<backends::ProfileMeasurement> log;
  backends::DeviceProfile profile = backends::measure_device_profile(
      [](const std::string& backend) {
        runtime::SessionOptions o;
        o.backend = backend;
        const double us = chain_us(o);
        return us < 0.0 ? us : us / kChainNodes;
      },
      &log);
  // Boundary cost: the same chain with every other node pinned to ref, so each of its nodes
  // starts a new partition; what its nodes' dispatch does not explain is kChainNodes - 1 boundaries.
  runtime::SessionOptions alternating;
  alternating.backend = "cpu";
  for (int i = 1; i < kChainNodes; i += 2) alternating.partition.pins["relu" + std::to_string(i)] = "ref";
  const double split = chain_us(alternating);
  const double nodes_us = kChainNodes / 2 * (profile.for_backend("cpu").step_us + profile.for_backend("ref").step_us);
  if (split > 0.0) {
    const double per = std::max(0.05, (split - nodes_us) / (kChainNodes - 1));
    for (backends::BackendProfile& p : profile.backends) p.boundary_us = per;
    log.push_back({"per partition boundary (cpu <-> ref)", per, "us"});
  }
  for (const backends::ProfileMeasurement& m : log) {
    std::printf("%-40s %10.2f %s\n", m.what.c_str(), m.value, m.unit.c_str());
  }
  if (args.output.empty()) {
    std::fputs(backends::device_profile_json(profile).c_str(), stdout);
    return 0;
  }
  Status s = backends::save_device_profile(profile, args.output);
  if (!s.ok()) return report(s);
  std::printf("written to %s\n", args.output.c_str());
  return 0;
}

}  // namespace nfuse::cli
