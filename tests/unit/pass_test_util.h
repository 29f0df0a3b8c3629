// Helpers for the graph-pass tests: build a model with OnnxBuilder, run it on the ref backend
// before and after a pass on the same seeded inputs, and compare.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/ref/interpreter.h"
#include "compile/plan_stats.h"
#include "frontend/onnx/onnx_importer.h"
#include "passes/pass_manager.h"
#include "runtime/session.h"
#include "support/onnx_builder.h"
#include "support/tolerances.h"

namespace nfuse::passes_test {

using namespace nfuse::passes;  // NOLINT(google-build-using-namespace): the passes under test
using testing::OnnxBuilder;
using testing::set_int_attr;
using testing::set_ints_attr;
constexpr int kF = ::onnx::TensorProto::FLOAT;
constexpr uint32_t kSeed = 20240611;

inline void set_float_attr(::onnx::NodeProto& node, const std::string& name, float v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void set_string_attr(::onnx::NodeProto& node, const std::string& name, const std::string& v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

// A float graph output whose shape import infers.
inline void out(OnnxBuilder& b, const std::string& name) {
  auto* vi = b.model().mutable_graph()->add_output();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(kF);
}

// Seeded values in [lo, hi).
inline std::vector<float> random_values(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

inline int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// An initializer of random values.
inline void random_initializer(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, uint32_t seed,
                               float lo = -1.0f, float hi = 1.0f) {
  b.initializer(name, dims, random_values(numel(dims), seed, lo, hi));
}

// An initializer of an integer element type (u8, i8, i32, i64) from int64 values, as raw_data.
inline void int_initializer(OnnxBuilder& b, const std::string& name, int elem, std::vector<int64_t> dims,
                            const std::vector<int64_t>& values) {
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  std::string raw;
  for (int64_t v : values) {
    if (elem == ::onnx::TensorProto::INT64) {
      raw.append(reinterpret_cast<const char*>(&v), 8);
    } else if (elem == ::onnx::TensorProto::INT32) {
      const int32_t x = static_cast<int32_t>(v);
      raw.append(reinterpret_cast<const char*>(&x), 4);
    } else if (elem == ::onnx::TensorProto::INT16 || elem == ::onnx::TensorProto::UINT16) {
      const uint16_t x = static_cast<uint16_t>(v);
      raw.append(reinterpret_cast<const char*>(&x), 2);
    } else {
      raw.push_back(static_cast<char>(static_cast<uint8_t>(v)));
    }
  }
  t->set_raw_data(raw);
}

inline std::unique_ptr<ir::Graph> load(const OnnxBuilder& b) {
  const std::string bytes = b.bytes();
  auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(*g) : nullptr;
}

inline passes::NodeEvaluator ref_evaluator() { return backends::ref::node_evaluator(); }

// Seeded inputs for every graph input (symbolic dims become 2).
inline std::vector<ir::Tensor> random_inputs(const ir::Graph& g, uint32_t seed) {
  std::vector<ir::Tensor> out;
  for (const ir::Value* v : g.inputs()) {
    std::vector<int64_t> dims;
    for (const ir::Dim& d : v->type.shape.dims()) dims.push_back(d.is_static() ? d.value : 2);
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, dims);
    std::vector<float> vals = random_values(t.numel(), seed++, -2.0f, 2.0f);
    std::copy(vals.begin(), vals.end(), t.data<float>());
    out.push_back(t);
  }
  return out;
}

inline void expect_close(const std::vector<ir::Tensor>& before, const std::vector<ir::Tensor>& after,
                         const std::string& what) {
  ASSERT_EQ(before.size(), after.size()) << what;
  for (size_t o = 0; o < before.size(); ++o) {
    ASSERT_EQ(before[o].dims(), after[o].dims()) << what << ": output " << o;
    for (int64_t i = 0; i < before[o].numel(); ++i) {
      const double a = after[o].get_double(i), b = before[o].get_double(i);
      ASSERT_LE(std::fabs(a - b), test::kPassRewriteRel * (std::fabs(b) + 1.0))
          << what << ": seed " << kSeed << ", output " << o << " " << ir::dims_to_string(before[o].dims())
          << ", first mismatch at flat index " << i << ": after " << a << ", before " << b;
    }
  }
}

// Counts nodes of an op type.
inline int count_ops(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

inline const ir::Node* find_op(const ir::Graph& g, const std::string& op) {
  for (const auto& node : g.nodes())
    if (node->op_type == op) return node.get();
  return nullptr;
}

// The model through the default pipeline on `backend`, run on seeded inputs and compared with the
// ref interpreter on the graph as imported (a mismatch fails the test). The session is returned
// for the caller's checks of the pass report and graph (null after a failure already reported),
// with the nodes the plan runs on reference kernels.
struct PipelineRun {
  std::unique_ptr<runtime::Session> session;
  std::vector<std::string> reference_nodes;
};
inline PipelineRun run_pipeline_against_ref(const OnnxBuilder& b, const std::string& backend, const std::string& what) {
  PipelineRun result;
  auto g = load(b);
  if (!g) return result;
  const std::vector<ir::Tensor> inputs = random_inputs(*g, kSeed);
  auto expected = backends::ref::interpret_graph(*g, inputs);
  EXPECT_TRUE(expected.ok()) << what << ": " << expected.status().to_string();
  if (!expected.ok()) return result;
  runtime::NamedTensors named;
  std::map<std::string, std::vector<int64_t>> dims;
  for (size_t i = 0; i < inputs.size(); ++i) {
    named.push_back({g->inputs()[i]->name, inputs[i]});
    dims[g->inputs()[i]->name] = inputs[i].dims();
  }
  runtime::SessionOptions o;
  o.backend = backend;
  auto session = runtime::Session::create(std::move(g), o);
  EXPECT_TRUE(session.ok()) << what << ": " << session.status().to_string();
  if (!session.ok()) return result;
  auto plan = (*session)->prepare(dims);
  EXPECT_TRUE(plan.ok()) << what << ": " << plan.status().to_string();
  if (!plan.ok()) return result;
  result.reference_nodes = compile::compute_stats((*session)->graph(), **plan).reference_nodes;
  auto got = (*session)->run(named);
  EXPECT_TRUE(got.ok()) << what << " on " << backend << ": " << got.status().to_string();
  if (!got.ok()) return result;
  expect_close(*expected, *got, what + " (" + backend + ")");
  result.session = std::move(*session);
  return result;
}

// Loads the model twice, runs `pass` on one copy, checks it verifies, and compares both on the
// ref interpreter and (after) on a ref-backend Session. Returns the rewritten graph's log and
// leaves the rewritten graph in `*after_out` when given.
inline std::vector<std::string> check_pass(const OnnxBuilder& b,
                                           const std::function<Status(ir::Graph&, passes::PassLog&)>& pass,
                                           const std::string& what, std::unique_ptr<ir::Graph>* after_out = nullptr) {
  auto before = load(b);
  auto after = load(b);
  if (!before || !after) return {};
  passes::PassLog log;
  Status s = pass(*after, log);
  EXPECT_TRUE(s.ok()) << what << ": " << s.to_string();
  Status v = after->verify();
  EXPECT_TRUE(v.ok()) << what << ": verify after the pass: " << v.to_string();
  const std::vector<ir::Tensor> inputs = random_inputs(*before, kSeed);
  auto expected = backends::ref::interpret_graph(*before, inputs);
  EXPECT_TRUE(expected.ok()) << expected.status().to_string();
  auto got = backends::ref::interpret_graph(*after, inputs);
  EXPECT_TRUE(got.ok()) << what << ": " << got.status().to_string();
  if (expected.ok() && got.ok()) expect_close(*expected, *got, what + " (interpreter)");
  if (after_out) {
    *after_out = std::move(after);
  } else if (expected.ok() && v.ok()) {
    // The ref backend's compiled path applies fused epilogues too.
    runtime::NamedTensors named;
    for (size_t i = 0; i < inputs.size(); ++i) named.push_back({after->inputs()[i]->name, inputs[i]});
    auto session = runtime::Session::create(std::move(after), {});
    EXPECT_TRUE(session.ok()) << session.status().to_string();
    if (session.ok()) {
      auto out = (*session)->run(named);
      EXPECT_TRUE(out.ok()) << what << ": " << out.status().to_string();
      if (out.ok()) expect_close(*expected, *out, what + " (session)");
    }
  }
  return log.lines();
}

}  // namespace nfuse::passes_test
