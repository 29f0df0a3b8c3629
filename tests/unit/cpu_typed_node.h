// A one-node graph with inputs of any dtype and any number of outputs, run on `cpu` and on `ref`
// (the oracle) through runtime::Session; for the data-movement and Resize tests, whose index
// inputs (shape, sizes, split) are i64 and whose Split has several outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compile/plan_stats.h"
#include "cpu_test_util.h"

namespace nfuse::cpu_test {

struct TypedNode {
  std::string op;
  std::vector<Operand> inputs;  // dtype from each tensor
  ir::Attributes attrs;
  int outputs = 1;
  int opset = 17;
  std::string domain;  // "" (ONNX) or "nfuse"

  std::unique_ptr<ir::Graph> build() const {
    auto g = std::make_unique<ir::Graph>();
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Operand& o = inputs[i];
      if (o.tensor.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      ir::Value* v =
          g->add_value("in" + std::to_string(i), {o.tensor.dtype(), ir::Shape::from_dims(o.tensor.dims())}).value();
      if (o.constant) {
        v->constant = o.tensor;
      } else {
        g->inputs().push_back(v);
      }
      ins.push_back(v);
    }
    std::vector<ir::Value*> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(g->add_value("y" + std::to_string(i)).value());
    ir::Node* n = g->add_node(op, "n", ins, outs, attrs);
    n->opset = opset;
    n->domain = domain;
    for (ir::Value* y : outs) g->outputs().push_back(y);
    g->relink();
    return g;
  }

  Result<std::vector<ir::Tensor>> run(const std::string& backend, int threads) const {
    runtime::SessionOptions options;
    options.backend = backend;
    options.threads = threads;
    NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(build(), options));
    runtime::NamedTensors feeds;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].tensor.empty() && !inputs[i].constant) feeds.push_back({"in" + std::to_string(i), inputs[i].tensor});
    return s->run(feeds);
  }
};

// Runs on cpu (at `threads`) and ref. f32 outputs must agree within f32_gemm_tol(ref, k);
// other dtypes (and k == 0) bit for bit.
inline void expect_typed_matches_ref(const TypedNode& c, int64_t k, const std::string& what, int threads = 1) {
  auto ref = c.run("ref", 1);
  ASSERT_TRUE(ref.ok()) << what << ": ref: " << ref.status().to_string();
  auto got = c.run("cpu", threads);
  ASSERT_TRUE(got.ok()) << what << ": cpu: " << got.status().to_string();
  ASSERT_EQ(got->size(), ref->size()) << what;
  for (size_t o = 0; o < ref->size(); ++o) {
    const ir::Tensor& r = (*ref)[o];
    const ir::Tensor& y = (*got)[o];
    ASSERT_EQ(y.dims(), r.dims()) << what << " output " << o;
    ASSERT_EQ(y.dtype(), r.dtype()) << what << " output " << o;
    if (r.dtype() != ir::DType::kF32 || k == 0) {
      const size_t es = ir::dtype_size(r.dtype());
      for (int64_t i = 0; i < r.numel(); ++i) {
        if (std::memcmp(static_cast<const char*>(y.raw()) + i * es, static_cast<const char*>(r.raw()) + i * es, es)) {
          FAIL() << what << " (seed " << kSeed << ", threads " << threads << "): output " << o
                 << " first mismatch at flat index " << i << " of " << ir::dims_to_string(r.dims());
        }
      }
      continue;
    }
    for (int64_t i = 0; i < r.numel(); ++i) {
      const double rv = r.data<float>()[i], yv = y.data<float>()[i];
      const double tol = test::f32_gemm_tol(rv, static_cast<size_t>(k));
      if (!(std::fabs(yv - rv) <= tol)) {
        FAIL() << what << " (seed " << kSeed << ", threads " << threads << "): output " << o
               << " first mismatch at flat index " << i << " of " << ir::dims_to_string(r.dims()) << ": cpu " << yv
               << ", ref " << rv << ", tol " << tol;
      }
    }
  }
}

// expect_typed_matches_ref at 1 and 2 threads, and the node ran on its cpu kernel, not on its
// reference kernel.
inline void expect_cpu_kernel_matches_ref(const TypedNode& n, int64_t k, const std::string& what) {
  for (int threads : {1, 2}) expect_typed_matches_ref(n, k, what, threads);
  runtime::SessionOptions o;
  o.backend = "cpu";
  auto s = runtime::Session::create(n.build(), o);
  ASSERT_TRUE(s.ok()) << what << ": " << s.status().to_string();
  std::map<std::string, std::vector<int64_t>> dims;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!n.inputs[i].tensor.empty() && !n.inputs[i].constant)
      dims["in" + std::to_string(i)] = n.inputs[i].tensor.dims();
  auto plan = (*s)->prepare(dims);
  ASSERT_TRUE(plan.ok()) << what << ": " << plan.status().to_string();
  const auto ref_nodes = compile::compute_stats((*s)->graph(), **plan).reference_nodes;
  EXPECT_TRUE(ref_nodes.empty()) << what << ": ran on the reference kernel";
}

}  // namespace nfuse::cpu_test
