// The cpu backend's pooling, Gemm/MatMul, element-wise, Softmax and LayerNormalization ops against
// the ref backend.
#include <limits>
#include <string>

#include "cpu_test_util.h"

namespace nfuse {
namespace {

using cpu_test::OneNode;
using cpu_test::random_tensor;

OneNode unary_node(const std::string& op, ir::Tensor x) {
  OneNode n;
  n.op = op;
  n.inputs.push_back({std::move(x), false});
  return n;
}

TEST(CpuPool, MaxAndAverage) {
  std::mt19937 rng(cpu_test::kSeed + 10);
  struct P { int64_t c, h, w, k, s, p; int ceil; };
  for (const P& p : {P{1, 7, 9, 3, 2, 1, 0}, P{3, 11, 12, 3, 2, 1, 1}, P{8, 13, 13, 2, 2, 0, 0},
                     P{4, 9, 10, 5, 1, 2, 0}, P{17, 8, 15, 3, 1, 1, 0}, P{5, 12, 10, 3, 3, 0, 1},
                     // Rows wide enough for the vectorised interior of max pooling (stride 1, 2
                     // and the generic stride), with the last window past the edge in ceil mode.
                     P{2, 9, 67, 3, 2, 1, 1}, P{2, 7, 70, 5, 1, 2, 0}, P{2, 6, 71, 3, 3, 1, 1},
                     P{2, 5, 33, 2, 2, 0, 1}}) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      for (int include_pad : {0, 1}) {
        OneNode n = unary_node(op, random_tensor({2, p.c, p.h, p.w}, rng));
        n.attrs.set("kernel_shape", std::vector<int64_t>{p.k, p.k});
        n.attrs.set("strides", std::vector<int64_t>{p.s, p.s});
        n.attrs.set("pads", std::vector<int64_t>{p.p, p.p, p.p, p.p});
        n.attrs.set("ceil_mode", int64_t{p.ceil});
        if (std::string(op) == "AveragePool") n.attrs.set("count_include_pad", int64_t{include_pad});
        cpu_test::expect_matches_ref(n, p.k * p.k, std::string(op) + " c" + std::to_string(p.c) + " k" +
                                                       std::to_string(p.k) + " include_pad " +
                                                       std::to_string(include_pad));
      }
    }
  }
  // Dilated max pooling, and NaNs, which never win a window (as in ref).
  OneNode dil = unary_node("MaxPool", random_tensor({1, 3, 11, 40}, rng));
  dil.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  dil.attrs.set("dilations", std::vector<int64_t>{2, 2});
  dil.attrs.set("pads", std::vector<int64_t>{2, 2, 2, 2});
  dil.inputs[0].tensor.data<float>()[45] = std::numeric_limits<float>::quiet_NaN();
  cpu_test::expect_matches_ref(dil, 9, "MaxPool dilation 2 with a NaN");
  // Undilated max pooling runs separably (rows, then columns): NaNs anywhere, a corner window of
  // NaNs only (-inf, as ref), non-square and asymmetric windows, and rows wider than its buffer.
  OneNode sep = unary_node("MaxPool", random_tensor({1, 2, 9, 12}, rng));
  sep.attrs.set("kernel_shape", std::vector<int64_t>{5, 5});
  sep.attrs.set("pads", std::vector<int64_t>{2, 2, 2, 2});
  float* sx = sep.inputs[0].tensor.data<float>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) sx[r * 12 + c] = std::numeric_limits<float>::quiet_NaN();
  // Plane 1: a window's largest value with a NaN below it, in the window's last row: a fold
  // that let the NaN in would lose the 100.
  sx[108 + 3 * 12 + 6] = 100.0f;
  sx[108 + 4 * 12 + 6] = std::numeric_limits<float>::quiet_NaN();
  sx[108 + 4 * 12 + 7] = -std::numeric_limits<float>::infinity();
  auto sep_out = sep.run("cpu", 1);
  ASSERT_TRUE(sep_out.ok()) << sep_out.status().to_string();
  EXPECT_EQ(sep_out->data<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(sep_out->data<float>()[108 + 2 * 12 + 6], 100.0f);
  cpu_test::expect_matches_ref(sep, 25, "MaxPool 5x5 separable with NaNs");
  struct W { int64_t h, w, kh, kw, sh, sw, pt, pl, pb, pr; };
  for (const W& q : {W{7, 11, 1, 3, 1, 1, 0, 1, 0, 1}, W{10, 6, 3, 1, 2, 1, 1, 0, 0, 0}, W{8, 13, 3, 2, 1, 2, 0, 1, 2, 0},
                     W{4, 2100, 3, 3, 1, 1, 1, 1, 1, 1}, W{3, 4200, 2, 2, 2, 2, 0, 0, 0, 0}}) {
    OneNode n = unary_node("MaxPool", random_tensor({1, 2, q.h, q.w}, rng));
    n.attrs.set("kernel_shape", std::vector<int64_t>{q.kh, q.kw});
    n.attrs.set("strides", std::vector<int64_t>{q.sh, q.sw});
    n.attrs.set("pads", std::vector<int64_t>{q.pt, q.pl, q.pb, q.pr});
    cpu_test::expect_matches_ref(n, q.kh * q.kw, "MaxPool " + std::to_string(q.kh) + "x" + std::to_string(q.kw) +
                                                     " on " + std::to_string(q.h) + "x" + std::to_string(q.w));
  }
  for (int64_t c : {1, 3, 17, 64}) {
    OneNode n = unary_node("GlobalAveragePool", random_tensor({2, c, 7, 9}, rng));
    cpu_test::expect_matches_ref(n, 63, "GlobalAveragePool c" + std::to_string(c), 2);
  }
}

TEST(CpuGemm, GemmAndMatMul) {
  std::mt19937 rng(cpu_test::kSeed + 11);
  for (int64_t m : {1, 5, 12, 13, 40}) {
    for (int64_t k : {1, 7, 64, 300}) {
      for (int64_t n : {1, 16, 17, 33, 100}) {
        for (int tb : {0, 1}) {
          OneNode g;
          g.op = "Gemm";
          g.inputs.push_back({random_tensor({m, k}, rng), false});
          g.inputs.push_back({random_tensor(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, rng), true});
          g.inputs.push_back({random_tensor({n}, rng), true});
          g.attrs.set("transB", int64_t{tb});
          const std::string what = "Gemm " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                                   " transB " + std::to_string(tb);
          cpu_test::expect_matches_ref(g, k, what, m == 40 ? 2 : 1);
        }
      }
    }
  }
  OneNode g;  // alpha, beta, transA, scalar C, fused Relu + residual
  g.op = "Gemm";
  g.inputs.push_back({random_tensor({9, 6}, rng), false});
  g.inputs.push_back({random_tensor({9, 11}, rng), true});
  g.inputs.push_back({random_tensor({1}, rng), true});
  g.attrs.set("transA", int64_t{1});
  g.attrs.set("alpha", 0.5f);
  g.attrs.set("beta", 2.0f);
  cpu_test::set_activation(g.attrs, "Relu", {});
  g.residual = random_tensor({6, 11}, rng);
  cpu_test::expect_matches_ref(g, 9, "Gemm transA alpha beta relu residual");

  for (bool const_b : {true, false}) {
    OneNode mm;
    mm.op = "MatMul";
    mm.inputs.push_back({random_tensor({2, 3, 13, 24}, rng), false});
    mm.inputs.push_back({random_tensor(const_b ? std::vector<int64_t>{24, 17} : std::vector<int64_t>{2, 3, 24, 17},
                                       rng),
                         const_b});
    cpu_test::expect_matches_ref(mm, 24, std::string("MatMul const_b ") + (const_b ? "1" : "0"), 2);
  }
  OneNode bc;  // batch broadcast of B, HardSwish epilogue
  bc.op = "MatMul";
  bc.inputs.push_back({random_tensor({4, 5, 31}, rng), false});
  bc.inputs.push_back({random_tensor({1, 31, 9}, rng), false});
  cpu_test::set_activation(bc.attrs, "HardSwish", {1.0f / 6.0f, 0.5f});
  cpu_test::expect_matches_ref(bc, 31, "MatMul broadcast B hardswish", 3);
  bc.attrs.set(ops::kFusedAffineAttr, std::vector<float>{0.5f, -2.0f});  // fuse_affine's epilogue
  cpu_test::expect_matches_ref(bc, 31, "MatMul broadcast B hardswish affine", 3);
  OneNode v;  // 1-D A: reference fallback inside the op
  v.op = "MatMul";
  v.inputs.push_back({random_tensor({7}, rng), false});
  v.inputs.push_back({random_tensor({7, 5}, rng), false});
  cpu_test::expect_matches_ref(v, 7, "MatMul 1-D A");
}

TEST(CpuElementwise, BinaryBroadcasts) {
  std::mt19937 rng(cpu_test::kSeed + 12);
  const std::vector<std::vector<int64_t>> shapes_b = {{2, 17, 5, 7}, {1, 17, 1, 1}, {17, 1, 1}, {1},
                                                      {7},           {5, 7},        {2, 1, 1, 1}, {1, 1, 5, 1}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto& sb : shapes_b) {
      for (bool swap : {false, true}) {
        OneNode n;
        n.op = op;
        ir::Tensor full = random_tensor({2, 17, 5, 7}, rng, 0.5f, 2.0f);
        ir::Tensor small = random_tensor(sb, rng, 0.5f, 2.0f);
        n.inputs.push_back({swap ? small : full, false});
        n.inputs.push_back({swap ? full : small, false});
        cpu_test::expect_matches_ref(n, 1, std::string(op) + " b " + ir::dims_to_string(sb) + (swap ? " swapped" : ""),
                                     2);
      }
    }
  }
  OneNode outer;  // [N,1] x [1,M]: neither operand full, reference fallback
  outer.op = "Mul";
  outer.inputs.push_back({random_tensor({5, 1}, rng), false});
  outer.inputs.push_back({random_tensor({1, 6}, rng), false});
  cpu_test::expect_matches_ref(outer, 1, "Mul outer product");
  // Max / Min: NaN operands give NaN, ties keep the first operand (+0 vs -0), as ref does; a
  // variadic Max of three inputs runs on the reference kernel.
  for (const char* op : {"Max", "Min"}) {
    OneNode special;
    special.op = op;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    special.inputs.push_back(
        {ir::Tensor::from_vector(std::vector<float>{nan, 1.0f, 0.0f, -0.0f, inf, -inf, 2.0f, nan}, {8}), false});
    special.inputs.push_back(
        {ir::Tensor::from_vector(std::vector<float>{1.0f, nan, -0.0f, 0.0f, -inf, inf, 2.0f, nan}, {8}), false});
    cpu_test::expect_matches_ref(special, 1, std::string(op) + " special values");
    OneNode three;
    three.op = op;
    for (int k = 0; k < 3; ++k) three.inputs.push_back({random_tensor({2, 3, 4}, rng), false});
    cpu_test::expect_matches_ref(three, 1, std::string(op) + " of three");
  }
}

TEST(CpuElementwise, Unary) {
  std::mt19937 rng(cpu_test::kSeed + 13);
  for (const char* op : {"Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "LeakyRelu", "Clip"}) {
    OneNode n = unary_node(op, random_tensor({3, 7, 11, 13}, rng, -6.0f, 6.0f));
    if (std::string(op) == "Clip") {
      n.inputs.push_back({ir::Tensor::from_vector(std::vector<float>{-1.5f}, {}), true});
      n.inputs.push_back({ir::Tensor::from_vector(std::vector<float>{2.5f}, {}), true});
    }
    cpu_test::expect_matches_ref(n, 1, op, 2);
  }
}

TEST(CpuSoftmax, LastAxis) {
  std::mt19937 rng(cpu_test::kSeed + 14);
  for (int64_t n : {1, 7, 16, 1000}) {
    OneNode s = unary_node("Softmax", random_tensor({3, 5, n}, rng, -8.0f, 8.0f));
    cpu_test::expect_matches_ref(s, 1, "Softmax n " + std::to_string(n), 2);
  }
  OneNode masked = unary_node("Softmax", random_tensor({5, 33}, rng, -8.0f, 8.0f));  // attention masks
  float* m = masked.inputs[0].tensor.data<float>();
  for (int64_t i = 0; i < 33; i += 3) m[i] = -std::numeric_limits<float>::infinity();  // row 0: some -inf
  for (int64_t i = 33; i < 66; ++i) m[i] = i % 2 ? -200.0f : 150.0f;                  // row 1: far below max
  m[4 * 33 + 20] = std::numeric_limits<float>::quiet_NaN();                           // row 4: a NaN poisons it
  cpu_test::expect_matches_ref(masked, 1, "Softmax masked");
  OneNode mid = unary_node("Softmax", random_tensor({3, 5, 4}, rng));  // axis 1: reference
  mid.attrs.set("axis", int64_t{1});
  cpu_test::expect_matches_ref(mid, 1, "Softmax axis 1");
}

TEST(CpuLayerNorm, AxesSizesAndParameters) {
  std::mt19937 rng(cpu_test::kSeed + 15);
  struct C { std::vector<int64_t> x; int64_t axis; };
  for (const C& c : {C{{2, 3, 17}, -1}, C{{4, 1}, -1}, C{{3, 1000}, 1}, C{{2, 128, 256}, 2}, C{{2, 3, 4, 5}, 2},
                     C{{5, 7}, 0}, C{{1, 3, 16}, -1}, C{{6, 33}, -1}}) {
    const size_t a = static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis);
    const std::vector<int64_t> inner(c.x.begin() + static_cast<std::ptrdiff_t>(a), c.x.end());
    int64_t row = 1;
    for (int64_t d : inner) row *= d;
    for (int variant = 0; variant < 4; ++variant) {  // bias / no bias, constant / run-time parameters
      OneNode n = unary_node("LayerNormalization", random_tensor(c.x, rng, -3.0f, 5.0f));
      n.attrs.set("axis", c.axis);
      n.attrs.set("epsilon", 1e-3f);
      n.inputs.push_back({random_tensor(inner, rng, 0.5f, 2.0f), variant < 2});
      if (variant % 2 == 0) n.inputs.push_back({random_tensor(inner, rng), variant < 2});
      cpu_test::expect_matches_ref(n, row, "LayerNorm " + ir::dims_to_string(c.x) + " axis " +
                                               std::to_string(c.axis) + " variant " + std::to_string(variant), 3);
    }
  }
  // Scale as a single value, B broadcast over the leading inner dim (reference fallback), and
  // Scale/B with leading 1s.
  OneNode scalar = unary_node("LayerNormalization", random_tensor({3, 4, 5}, rng));
  scalar.attrs.set("axis", int64_t{1});
  scalar.inputs.push_back({random_tensor({1}, rng), true});
  scalar.inputs.push_back({random_tensor({5}, rng), true});
  cpu_test::expect_matches_ref(scalar, 20, "LayerNorm scalar scale, broadcast bias");
  OneNode ones = unary_node("LayerNormalization", random_tensor({3, 1, 5}, rng));
  ones.attrs.set("axis", int64_t{1});
  ones.inputs.push_back({random_tensor({5}, rng), true});
  ones.inputs.push_back({random_tensor({1, 5}, rng), false});
  cpu_test::expect_matches_ref(ones, 5, "LayerNorm leading-1 parameters");
  OneNode constant_row = unary_node("LayerNormalization", random_tensor({2, 9}, rng));
  for (int64_t i = 0; i < 9; ++i) constant_row.inputs[0].tensor.data<float>()[i] = 2.5f;  // variance 0
  constant_row.inputs.push_back({random_tensor({9}, rng), true});
  cpu_test::expect_matches_ref(constant_row, 9, "LayerNorm zero variance");
}

}  // namespace
}  // namespace nfuse
