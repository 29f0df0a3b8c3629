// The cpu backend's Sum, Mean, Max and Min over any number of inputs (cpu_binary.cpp) and TopK
// (cpu_topk.cpp) against the ref backend: one to five inputs in every broadcast form (all full,
// some broadcast, none the output's shape), NaN in Max and Min (bit for bit), Sum and Mean within
// the f32 accumulation bound; TopK on every axis, largest and smallest, ties (the smaller index
// first), NaN, k equal to the axis, k = 0, i64 values and a K fed at run time, bit for bit. At 1
// and 2 threads on tensors that split into parts, and each case checks that the node ran on its
// cpu kernel.
#include <limits>
#include <string>
#include <vector>

#include "cpu_typed_node.h"

namespace nfuse {
namespace {

using cpu_test::random_tensor;
using cpu_test::TypedNode;

std::string dims_list(const std::vector<std::vector<int64_t>>& dims) {
  std::string s;
  for (const auto& d : dims) s += ir::dims_to_string(d) + " ";
  return s;
}

// Input sets: each shape broadcasts to the largest.
const std::vector<std::vector<std::vector<int64_t>>> kInputSets = {
    {{4, 64, 80}},                                     // one input: a copy
    {{4, 64, 80}, {4, 64, 80}},                        // same shape, in parts
    {{2, 3, 4, 5}, {5}, {3, 1, 1}},                    // full first, then broadcast ones
    {{5}, {2, 3, 4, 5}, {}, {1, 4, 1}, {2, 3, 4, 5}},  // full only second
    {{2, 1, 4}, {1, 3, 1}, {4}},                       // no input has the output's shape
    {{0, 3}, {1, 3}, {3}},                             // empty
};

TEST(CpuVariadic, SumMeanMaxMinOverAnyInputCount) {
  std::mt19937 rng(cpu_test::kSeed + 500);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    const bool ordered = std::string(op) == "Max" || std::string(op) == "Min";  // bit for bit
    for (const auto& set : kInputSets) {
      TypedNode n;
      n.op = op;
      n.opset = 13;
      for (size_t i = 0; i < set.size(); ++i) {
        ir::Tensor t = random_tensor(set[i], rng, -2.0f, 2.0f);
        if (ordered && t.numel() > 3)
          t.data<float>()[(i + 1) % static_cast<size_t>(t.numel())] = std::numeric_limits<float>::quiet_NaN();
        n.inputs.push_back({t, i == 2});  // a constant among them
      }
      cpu_test::expect_cpu_kernel_matches_ref(n, ordered ? 0 : static_cast<int64_t>(set.size()),
                                              std::string(op) + " of " + dims_list(set));
    }
  }
}

ir::Tensor k_tensor(int64_t k) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kI64, {1});
  t.data<int64_t>()[0] = k;
  return t;
}

// Few distinct values, so that many lines hold ties.
ir::Tensor tied(std::vector<int64_t> dims, std::mt19937& rng) {
  ir::Tensor t = random_tensor(std::move(dims), rng, -4.0f, 4.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
  return t;
}

TEST(CpuTopK, EveryAxisTiesNanAndRunTimeK) {
  std::mt19937 rng(cpu_test::kSeed + 501);
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis, k;
  };
  const Case cases[] = {
      {{3, 7, 50}, -1, 5}, {{3, 7, 50}, 1, 7}, {{3, 7, 50}, 0, 1}, {{64, 1000}, 1, 10},  // lines in parts
      {{64, 1000}, 0, 3},  {{5, 9}, 1, 0},
  };
  for (const Case& c : cases) {
    for (int largest : {1, 0}) {
      for (bool with_nan : {false, true}) {
        ir::Tensor x = tied(c.dims, rng);
        if (with_nan)
          for (int64_t i = 0; i < x.numel(); i += 13) x.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
        TypedNode n;
        n.op = "TopK";
        n.opset = 11;
        n.outputs = 2;
        n.inputs = {{x, false}, {k_tensor(c.k), true}};
        n.attrs.set("axis", c.axis);
        n.attrs.set("largest", int64_t{largest});
        cpu_test::expect_cpu_kernel_matches_ref(n, 0,
                                                "TopK " + ir::dims_to_string(c.dims) + " axis " +
                                                    std::to_string(c.axis) + " k " + std::to_string(c.k) +
                                                    (largest ? " largest" : " smallest") + (with_nan ? " NaN" : ""));
      }
    }
  }
  // i64 values, and K fed at run time (the output shape is known only then).
  ir::Tensor x = tied({6, 40}, rng);
  ir::Tensor xi = ir::Tensor::allocate(ir::DType::kI64, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) xi.data<int64_t>()[i] = static_cast<int64_t>(x.data<float>()[i]);
  TypedNode n;
  n.op = "TopK";
  n.opset = 11;
  n.outputs = 2;
  n.inputs = {{xi, false}, {k_tensor(4), false}};
  cpu_test::expect_cpu_kernel_matches_ref(n, 0, "TopK i64 with K at run time");
}

}  // namespace
}  // namespace nfuse
