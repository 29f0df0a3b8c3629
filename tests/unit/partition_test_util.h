// Helpers for the partitioner tests: small CNNs built with OnnxBuilder, a test device profile,
// and a direct call of the partitioner on a graph's runtime nodes (the ref plan's order).
// The fake backend "fake_npu" (partition_passes_test.cpp) runs 4-D f32 Conv, Relu, Add and
// MaxPool with static shapes, by compiling them on the cpu backend.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/device_profile.h"
#include "compile/plan.h"
#include "frontend/onnx/onnx_importer.h"
#include "partition/partitioner.h"
#include "support/onnx_builder.h"

namespace nfuse::partition_test {

using testing::OnnxBuilder;
using testing::set_ints_attr;
constexpr int kF = ::onnx::TensorProto::FLOAT;
inline const char* const kFake = "fake_npu";
// The same fake with the trait that it keeps intermediates on chip (as fusion does).
inline const char* const kFakeChain = "fake_chain_npu";

inline void random_init(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  b.initializer(name, dims, v);
}

inline void float_output(OnnxBuilder& b, const std::string& name) {
  auto* vi = b.model().mutable_graph()->add_output();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(kF);
}

inline std::unique_ptr<ir::Graph> load(const OnnxBuilder& b) {
  const std::string bytes = b.bytes();
  auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(*g) : nullptr;
}

// x [1,3,H,W] -> conv1 (3x3, 16) -> relu1 -> conv2 (1x1) -> sig1 (Sigmoid) -> relu2 -> sig2
//   -> conv3 (1x1) -> relu3 -> pool (MaxPool 2x2) -> gap -> flat -> fc (Gemm 16->10)
// The fake backend takes conv*, relu*, pool; not the Sigmoids, GlobalAveragePool (op) nor
// Flatten/Gemm (rank 2). relu2 sits alone between two Sigmoids: the ping-pong case.
inline OnnxBuilder small_cnn(int64_t h = 16, int64_t w = 16) {
  OnnxBuilder b;
  b.input("x", kF, {1, 3, h, w});
  random_init(b, "w1", {16, 3, 3, 3}, 1);
  random_init(b, "b1", {16}, 2);
  random_init(b, "w2", {16, 16, 1, 1}, 3);
  random_init(b, "w3", {16, 16, 1, 1}, 4);
  random_init(b, "fw", {10, 16}, 5);
  random_init(b, "fb", {10}, 6);
  set_ints_attr(b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  b.node("Sigmoid", {"c2"}, {"s1"}, "sig1");
  b.node("Relu", {"s1"}, {"r2"}, "relu2");
  b.node("Sigmoid", {"r2"}, {"s2"}, "sig2");
  b.node("Conv", {"s2", "w3"}, {"c3"}, "conv3");
  b.node("Relu", {"c3"}, {"r3"}, "relu3");
  auto& pool = b.node("MaxPool", {"r3"}, {"p"}, "pool");
  set_ints_attr(pool, "kernel_shape", {2, 2});
  set_ints_attr(pool, "strides", {2, 2});
  b.node("GlobalAveragePool", {"p"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flat");
  auto& fc = b.node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc");
  testing::set_int_attr(fc, "transB", 1);
  float_output(b, "y");
  return b;
}

// The built-in profile with fake_npu and fake_chain_npu entries: like cpu, `speedup` times its
// compute and bandwidths, with the given boundary cost.
inline backends::DeviceProfile test_profile(double speedup, double boundary_us) {
  backends::DeviceProfile d = backends::default_device_profile();
  std::erase_if(d.backends,
                [](const backends::BackendProfile& p) { return p.backend == kFake || p.backend == kFakeChain; });
  for (backends::BackendProfile& p : d.backends) p.boundary_us = boundary_us;
  for (const char* name : {kFake, kFakeChain}) {
    backends::BackendProfile fake = d.host();
    fake.backend = name;
    fake.gflops_f32 *= speedup;
    fake.gflops_f32_depthwise *= speedup;
    fake.l2_gbps *= speedup;
    fake.dram_gbps *= speedup;
    fake.boundary_us = boundary_us;
    d.backends.push_back(fake);
  }
  d.source = "test";
  return d;
}

// The partitioner run on the graph's runtime nodes at `dims` (types from a ref plan).
inline Result<partition::PartitionResult> place(const ir::Graph& g, const std::map<std::string, std::vector<int64_t>>& dims,
                                                const std::string& backend, const partition::PartitionOptions& options,
                                                const backends::DeviceProfile& profile) {
  compile::PlanOptions po;
  po.backend = "ref";
  NFUSE_ASSIGN_OR_RETURN(auto plan, compile::build_plan(g, dims, po));
  const compile::Plan* p = plan.get();
  partition::PartitionRequest req;
  req.graph = &g;
  if (!p->steps.empty()) req.nodes = p->steps[0].partition.nodes;
  req.type_of = p->view(g);
  req.is_constant = [p](const ir::Value* v) {
    auto it = p->slot_of.find(v);
    return v->constant.has_value() || (it != p->slot_of.end() && p->values[static_cast<size_t>(it->second)].known_value);
  };
  req.backend = backend;
  req.options = options;
  req.profile = profile;
  partition::BackendPool pool;
  return partition::partition_nodes(req, pool);
}

inline const partition::NodePlacement& placement(const partition::PartitionResult& r, const std::string& name) {
  for (const partition::NodePlacement& p : r.nodes)
    if (p.node->name == name) return p;
  ADD_FAILURE() << "no node " << name;
  return r.nodes.front();
}

// "conv1:fake_npu relu1:fake_npu ..." for failure messages and equality checks.
inline std::string placements(const partition::PartitionResult& r) {
  std::string s;
  for (const partition::NodePlacement& p : r.nodes) s += p.node->name + ":" + p.backend + " ";
  return s;
}

}  // namespace nfuse::partition_test
