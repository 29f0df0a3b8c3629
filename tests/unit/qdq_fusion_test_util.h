// Helpers for the QDQ fusion pass tests of the element-wise ops (fuse_qdq_binary, _concat, _pool):
// models of float inputs quantized and dequantized in front of the op, and a Q -> DQ after it,
// checked before and after the pass on ref (at most one quantization step apart) and after it on
// cpu against ref (bit for bit).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backends/ref/interpreter.h"
#include "pass_test_util.h"

namespace nfuse::passes_test {

constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;

// Graph input `name` (f32, dims) -> QuantizeLinear(scale, zp of elem) -> DequantizeLinear; returns
// the dequantized value's name. The scale is an initializer unless `scale_input`.
inline std::string quantized_input(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, int elem,
                                   float scale, int64_t zp, bool scale_input = false) {
  b.input(name, kF, std::move(dims));
  if (scale_input) b.input(name + "_scale", kF, {});
  else b.initializer(name + "_scale", {}, {scale});
  int_initializer(b, name + "_zp", elem, {}, {zp});
  b.node("QuantizeLinear", {name, name + "_scale", name + "_zp"}, {name + "_q"}, "q_" + name);
  b.node("DequantizeLinear", {name + "_q", name + "_scale", name + "_zp"}, {name + "_dq"}, "dq_" + name);
  return name + "_dq";
}

// Makes quantized_input `name`'s DequantizeLinear per channel (axis 1, `channels` entries of the
// same scale and zero point), which the fusion passes decline.
inline void dequantize_per_axis(OnnxBuilder& b, const std::string& name, int64_t channels, int elem, float scale,
                                int64_t zp) {
  for (auto& n : *b.model().mutable_graph()->mutable_node()) {
    if (n.name() != "dq_" + name) continue;
    n.set_input(1, name + "_scale_c");
    n.set_input(2, name + "_zp_c");
    set_int_attr(n, "axis", 1);
  }
  b.initializer(name + "_scale_c", {channels}, std::vector<float>(static_cast<size_t>(channels), scale));
  int_initializer(b, name + "_zp_c", elem, {channels}, std::vector<int64_t>(static_cast<size_t>(channels), zp));
}

// value -> QuantizeLinear(scale, zp) -> DequantizeLinear -> graph output "z".
inline void quantized_output(OnnxBuilder& b, const std::string& value, int elem, float scale, int64_t zp) {
  b.initializer("z_scale", {}, {scale});
  int_initializer(b, "z_zp", elem, {}, {zp});
  b.node("QuantizeLinear", {value, "z_scale", "z_zp"}, {"z_q"}, "q_z");
  b.node("DequantizeLinear", {"z_q", "z_scale", "z_zp"}, {"z"}, "dq_z");
  out(b, "z");
}

// Runs `pass` and checks: `fused_op` appears `expect_fused` times; output 0 before and after on
// ref differs by at most `step` (one quantization step of z) in at most `max_differ_pct` percent of
// elements; when fused, the rewritten graph gives the same bytes on cpu as on ref.
inline void check_fusion(const OnnxBuilder& b, const std::function<Status(ir::Graph&, passes::PassLog&)>& pass,
                         const std::string& fused_op, int expect_fused, float step, double max_differ_pct,
                         const std::string& what) {
  SCOPED_TRACE(what);
  auto before = load(b);
  auto after = load(b);
  ASSERT_TRUE(before && after);
  passes::PassLog log;
  ASSERT_TRUE(pass(*after, log).ok());
  Status v = after->verify();
  ASSERT_TRUE(v.ok()) << v.to_string();
  EXPECT_EQ(count_ops(*after, fused_op), expect_fused);
  const std::vector<ir::Tensor> inputs = random_inputs(*before, kSeed);
  auto expected = backends::ref::interpret_graph(*before, inputs);
  auto got = backends::ref::interpret_graph(*after, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const ir::Tensor& e = (*expected)[0];
  const ir::Tensor& g = (*got)[0];
  ASSERT_EQ(e.dims(), g.dims());
  int64_t differ = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double d = std::fabs(e.get_double(i) - g.get_double(i));
    ASSERT_LE(d, step * 1.0001) << "flat index " << i << " (seed " << kSeed << ")";
    differ += d > 0;
  }
  EXPECT_LE(static_cast<double>(differ) * 100.0, max_differ_pct * static_cast<double>(std::max<int64_t>(e.numel(), 1)))
      << differ << " of " << e.numel() << " outputs differ by one step";
  if (expect_fused == 0) return;
  runtime::NamedTensors named;
  for (size_t i = 0; i < inputs.size(); ++i) named.push_back({before->inputs()[i]->name, inputs[i]});
  std::vector<ir::Tensor> outs[2];
  int k = 0;
  for (const char* backend : {"ref", "cpu"}) {
    runtime::SessionOptions so;
    so.backend = backend;
    so.threads = 2;
    auto sess = runtime::Session::create(load(b), so);
    ASSERT_TRUE(sess.ok()) << sess.status().to_string();
    auto r = (*sess)->run(named);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    outs[k++] = *r;
  }
  for (int64_t i = 0; i < outs[0][0].numel(); ++i) {
    ASSERT_EQ(outs[0][0].get_double(i), outs[1][0].get_double(i)) << "cpu vs ref after optimisation, index " << i;
  }
}

// After `pass`, the graph of `b` runs on the cpu backend (unoptimized, `threads` threads, seeded
// inputs) without a node on the reference kernels: the fused op has its cpu kernel.
inline void expect_fused_runs_on_cpu(const OnnxBuilder& b,
                                     const std::function<Status(ir::Graph&, passes::PassLog&)>& pass,
                                     const std::string& what, int threads = 1) {
  SCOPED_TRACE(what);
  auto g = load(b);
  ASSERT_TRUE(g);
  passes::PassLog log;
  ASSERT_TRUE(pass(*g, log).ok());
  runtime::SessionOptions o;
  o.backend = "cpu";
  o.optimize = false;
  o.threads = threads;
  auto session = runtime::Session::create(std::move(g), o);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  const auto plain = load(b);
  const std::vector<ir::Tensor> values = random_inputs(*plain, kSeed);
  runtime::NamedTensors named;
  for (size_t i = 0; i < values.size(); ++i) named.push_back({plain->inputs()[i]->name, values[i]});
  backends::RunProfile profile;
  auto r = (*session)->run(named, &profile);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const auto& n : profile.nodes) EXPECT_FALSE(n.reference) << n.node->label() << " ran on ref";
}

}  // namespace nfuse::passes_test
