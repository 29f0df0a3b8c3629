// Helpers for the neural-network family tests: run one hand-built node on the ref kernels.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/ref/interpreter.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace nfuse::nn_test {

// Owns a graph holding one node whose inputs are the given tensors (omitted where empty).
struct NodeRun {
  ir::Graph g;
  ir::Node* node = nullptr;
  std::vector<ir::Tensor> ins;

  NodeRun(const std::string& op, std::vector<ir::Tensor> inputs, ir::Attributes attrs = {}, int n_outputs = 1,
          int opset = 17)
      : ins(std::move(inputs)) {
    std::vector<ir::Value*> in_values, out_values;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].empty()) {
        in_values.push_back(nullptr);
        continue;
      }
      ir::TensorType t{ins[i].dtype(), ir::Shape::from_dims(ins[i].dims())};
      in_values.push_back(g.add_value("in" + std::to_string(i), t).value());
    }
    for (int i = 0; i < n_outputs; ++i) out_values.push_back(g.add_value("out" + std::to_string(i)).value());
    node = g.add_node(op, "n", in_values, out_values, std::move(attrs));
    node->opset = opset;
  }

  // Verifies the node, then infers and runs it; every output.
  Result<std::vector<ir::Tensor>> run_all() const {
    std::vector<const ir::Tensor*> p;
    for (const ir::Tensor& t : ins) p.push_back(t.empty() ? nullptr : &t);
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::verify_node(*node));
    return backends::ref::evaluate_node(*node, p);
  }
  Result<ir::Tensor> run() const {
    NFUSE_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outs, run_all());
    return outs[0];
  }
};

inline ir::Tensor f32(std::vector<float> v, std::vector<int64_t> dims) { return ir::Tensor::from_vector(v, std::move(dims)); }
inline ir::Tensor i64(std::vector<int64_t> v, std::vector<int64_t> dims) { return ir::Tensor::from_vector(v, std::move(dims)); }
template <typename T>
ir::Tensor scalar(T v) {
  return ir::Tensor::from_vector(std::vector<T>{v}, {});
}

inline ir::Attributes attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attributes a;
  for (const auto& [name, value] : kv) a.set(name, value);
  return a;
}

// Every element as double.
inline std::vector<double> values(const ir::Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
  return v;
}

// Expects `t` to hold `expected` (dims and values within `tol`), naming the first mismatch.
inline void expect_tensor(const ir::Tensor& t, const std::vector<int64_t>& dims, const std::vector<double>& expected,
                          double tol = 1e-6) {
  ASSERT_EQ(t.dims(), dims);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    ASSERT_NEAR(t.get_double(i), expected[static_cast<size_t>(i)], tol) << "at flat index " << i;
  }
}

// A fixed-seed pseudo-random f32 tensor with values in [-1, 1) (a 32-bit LCG: reproducible
// everywhere, unlike std::uniform_real_distribution).
inline ir::Tensor random_f32(std::vector<int64_t> dims, uint32_t seed) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, std::move(dims));
  uint32_t s = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return t;
}

}  // namespace nfuse::nn_test
