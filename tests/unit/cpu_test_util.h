// One-node graphs run on the `cpu` backend and on `ref` (the oracle) through runtime::Session,
// compared element by element with a dot-product tolerance (tests/support/tolerances_kernels.h).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fused_epilogue.h"
#include "runtime/session.h"
#include "support/tolerances_kernels.h"

namespace nfuse::cpu_test {

inline constexpr uint32_t kSeed = 20240611;  // printed by every failure

inline ir::Tensor random_tensor(std::vector<int64_t> dims, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

struct Operand {
  ir::Tensor tensor;       // empty: an omitted optional input
  bool constant = false;   // initializer (weights) or graph input
};

// A one-node graph: op(inputs) -> y, optionally with a fused epilogue (activation attributes and
// a residual graph input, as fuse_activation / fuse_residual_add leave them).
struct OneNode {
  std::string op;
  std::vector<Operand> inputs;
  ir::Attributes attrs;
  ir::Tensor residual;  // empty: none
  int opset = 17;

  std::unique_ptr<ir::Graph> build() const {
    auto g = std::make_unique<ir::Graph>();
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Operand& o = inputs[i];
      if (o.tensor.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      ir::Value* v = g->add_value("in" + std::to_string(i), {ir::DType::kF32, ir::Shape::from_dims(o.tensor.dims())})
                         .value();
      if (o.constant) {
        v->constant = o.tensor;
      } else {
        g->inputs().push_back(v);
      }
      ins.push_back(v);
    }
    ir::Value* y = g->add_value("y").value();
    ir::Node* n = g->add_node(op, "n", ins, {y}, attrs);
    n->opset = opset;
    if (!residual.empty()) {
      ir::Value* r = g->add_value("r", {ir::DType::kF32, ir::Shape::from_dims(residual.dims())}).value();
      g->inputs().push_back(r);
      n->implicit_inputs.push_back(r);
      n->attrs.set(ops::kFusedResidualAttr, int64_t{1});
    }
    g->outputs().push_back(y);
    g->relink();
    return g;
  }

  runtime::NamedTensors feeds() const {
    runtime::NamedTensors f;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].tensor.empty() && !inputs[i].constant) f.push_back({"in" + std::to_string(i), inputs[i].tensor});
    if (!residual.empty()) f.push_back({"r", residual});
    return f;
  }

  Result<ir::Tensor> run(const std::string& backend, int threads) const {
    runtime::SessionOptions options;
    options.backend = backend;
    options.threads = threads;
    NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(build(), options));
    NFUSE_ASSIGN_OR_RETURN(auto outs, s->run(feeds()));
    return outs[0];
  }
};

inline void set_activation(ir::Attributes& a, const std::string& act, std::vector<float> params) {
  a.set(ops::kFusedActivationAttr, act);
  a.set(ops::kFusedActivationParamsAttr, std::move(params));
}

// Runs on cpu (at `threads`) and ref; expects the same dims and every element within
// tol(ref, k) (a dot product's bound by default). `what` names the case in failures.
inline void expect_matches_ref(const OneNode& case_, int64_t k, const std::string& what, int threads = 1,
                               double (*tol_fn)(double, size_t) = test::f32_gemm_tol) {
  auto ref = case_.run("ref", 1);
  ASSERT_TRUE(ref.ok()) << what << ": ref: " << ref.status().to_string();
  auto got = case_.run("cpu", threads);
  ASSERT_TRUE(got.ok()) << what << ": cpu: " << got.status().to_string();
  ASSERT_EQ(got->dims(), ref->dims()) << what;
  const float* y = got->data<float>();
  const float* r = ref->data<float>();
  for (int64_t i = 0; i < ref->numel(); ++i) {
    const double tol = tol_fn(r[i], static_cast<size_t>(k));
    if (std::isnan(r[i]) && std::isnan(y[i])) continue;  // both NaN: the same answer
    if (y[i] == r[i]) continue;                           // equal, infinities included
    if (!(std::fabs(double{y[i]} - double{r[i]}) <= tol)) {
      FAIL() << what << " (seed " << kSeed << ", threads " << threads << "): first mismatch at flat index " << i
             << " of " << ir::dims_to_string(ref->dims()) << ": cpu " << y[i] << ", ref " << r[i] << ", tol " << tol;
    }
  }
}

}  // namespace nfuse::cpu_test
