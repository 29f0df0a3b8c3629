#include "passes/recognize_layer_norm.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// nn.LayerNorm as PyTorch exports it below opset 17.
OnnxBuilder layer_norm(bool affine, bool mul_square, std::vector<int64_t> axes) {
  OnnxBuilder b(13);
  b.input("x", kF, {2, 5, 6, 8});
  std::vector<int64_t> inner;
  for (size_t i = 4 - axes.size(); i < 4; ++i) inner.push_back(std::vector<int64_t>{2, 5, 6, 8}[i]);
  set_ints_attr(b.node("ReduceMean", {"x"}, {"mu"}, "rm1"), "axes", axes);
  b.node("Sub", {"x", "mu"}, {"d"}, "sub");
  if (mul_square) {
    b.node("Mul", {"d", "d"}, {"d2"}, "sq");
  } else {
    b.initializer("two", {}, {2.0f});
    b.node("Pow", {"d", "two"}, {"d2"}, "sq");
  }
  set_ints_attr(b.node("ReduceMean", {"d2"}, {"var"}, "rm2"), "axes", axes);
  b.initializer("eps", {}, {1e-5f});
  b.node("Add", {"var", "eps"}, {"ve"}, "add_eps");
  b.node("Sqrt", {"ve"}, {"sd"}, "sqrt");
  b.node("Div", {"d", "sd"}, {affine ? "n" : "z"}, "div");
  if (affine) {
    random_initializer(b, "gamma", inner, 1, 0.5f, 1.5f);
    random_initializer(b, "beta", inner, 2);
    b.node("Mul", {"n", "gamma"}, {"g"}, "mul_gamma");
    b.node("Add", {"g", "beta"}, {"z"}, "add_beta");
  }
  out(b, "z");
  return b;
}

TEST(RecognizeLayerNorm, ReplacesTheDecomposedForms) {
  struct Case {
    bool affine, mul_square;
    std::vector<int64_t> axes;
    int axis;
  };
  for (const Case& c : {Case{true, false, {-1}, 3}, Case{false, false, {-1}, 3}, Case{true, true, {2, 3}, 2},
                        Case{false, true, {-2, -1}, 2}}) {
    std::unique_ptr<ir::Graph> after;
    auto lines = check_pass(layer_norm(c.affine, c.mul_square, c.axes), recognize_layer_norm, "ln", &after);
    ASSERT_TRUE(after);
    ASSERT_EQ(after->nodes().size(), 1u);
    const ir::Node& ln = *after->nodes()[0];
    EXPECT_EQ(ln.op_type, "LayerNormalization");
    EXPECT_EQ(ln.attrs.get_int("axis", -1), c.axis);
    EXPECT_EQ(ln.num_inputs(), c.affine ? 3 : 2);
    EXPECT_EQ(ln.output(0)->name, "z");
    EXPECT_EQ(lines.size(), 1u);
    check_pass(layer_norm(c.affine, c.mul_square, c.axes), recognize_layer_norm, "ln");
  }
}

TEST(RecognizeLayerNorm, LeavesNonTrailingAxesAndSharedIntermediates) {
  std::unique_ptr<ir::Graph> after;
  EXPECT_TRUE(check_pass(layer_norm(true, false, {1}), recognize_layer_norm, "axis1").empty());
  OnnxBuilder b = layer_norm(true, false, {-1});
  out(b, "mu");  // the mean is also an output
  EXPECT_TRUE(check_pass(b, recognize_layer_norm, "shared").empty());
}

}  // namespace
}  // namespace nfuse::passes_test
