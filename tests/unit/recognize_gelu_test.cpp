#include "passes/recognize_gelu.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// x -> MatMul -> h, then GELU(h) spelled out in the given variant.
OnnxBuilder gelu(int variant) {
  OnnxBuilder b(13);
  b.input("x", kF, {3, 6});
  random_initializer(b, "w", {6, 7}, 1, -2.0f, 2.0f);
  b.node("MatMul", {"x", "w"}, {"h"}, "mm");
  b.initializer("one", {}, {1.0f});
  b.initializer("half", {}, {0.5f});
  if (variant < 3) {
    if (variant == 1) {
      b.initializer("inv_sqrt2", {}, {0.70710678f});
      b.node("Mul", {"h", "inv_sqrt2"}, {"s"}, "scale");
    } else {
      b.initializer("sqrt2", {}, {1.4142135f});
      b.node("Div", {"h", "sqrt2"}, {"s"}, "scale");
    }
    b.node("Erf", {"s"}, {"e"}, "erf");
  } else {
    b.initializer("three", {}, {3.0f});
    b.initializer("c", {}, {0.044715f});
    b.initializer("k", {}, {0.7978845608f});
    b.node("Pow", {"h", "three"}, {"h3"}, "cube");
    b.node("Mul", {"c", "h3"}, {"ch3"}, "mul_c");
    b.node("Add", {"h", "ch3"}, {"inner"}, "add_inner");
    b.node("Mul", {"inner", "k"}, {"s"}, "scale");
    b.node("Tanh", {"s"}, {"e"}, "tanh");
  }
  b.node("Add", {"e", "one"}, {"a"}, "add1");
  if (variant == 0 || variant == 3) {  // (x * a) * 0.5, as torch exports it
    b.node("Mul", {"h", "a"}, {"m"}, "mul_x");
    b.node("Mul", {"m", "half"}, {"z"}, "mul_half");
  } else if (variant == 1) {  // (x * 0.5) * a
    b.node("Mul", {"h", "half"}, {"m"}, "mul_half");
    b.node("Mul", {"a", "m"}, {"z"}, "mul_x");
  } else {  // x * (a * 0.5)
    b.node("Mul", {"half", "a"}, {"m"}, "mul_half");
    b.node("Mul", {"h", "m"}, {"z"}, "mul_x");
  }
  out(b, "z");
  return b;
}

TEST(RecognizeGelu, ReplacesErfAndTanhForms) {
  for (int variant = 0; variant < 4; ++variant) {
    const std::string what = "gelu_variant_" + std::to_string(variant);
    std::unique_ptr<ir::Graph> after;
    auto lines = check_pass(gelu(variant), recognize_gelu, what, &after);
    ASSERT_TRUE(after);
    ASSERT_EQ(after->nodes().size(), 2u) << what;
    const ir::Node& g = *after->nodes()[1];
    EXPECT_EQ(g.op_type, "Gelu");
    EXPECT_EQ(g.domain, "nfuse");
    EXPECT_EQ(g.attrs.get_string("approximate", "none"), variant == 3 ? "tanh" : "none");
    EXPECT_EQ(g.output(0)->name, "z");
    EXPECT_EQ(lines.size(), 1u);
    check_pass(gelu(variant), recognize_gelu, what);
  }
}

// Both forms then fuse into the MatMul (fuse_activation) and run in the cpu kernel's epilogue on
// the vector GELU (f32-vmath), never the reference one.
TEST(RecognizeGelu, BothFormsRunOnTheCpuKernel) {
  for (int variant : {0, 3}) {
    const std::string what = "gelu_variant_" + std::to_string(variant);
    const PipelineRun r = run_pipeline_against_ref(gelu(variant), "cpu", what);
    ASSERT_TRUE(r.session) << what;
    EXPECT_EQ(count_ops(r.session->graph(), "Gelu"), 0) << what;
    ASSERT_EQ(r.session->graph().nodes().size(), 1u) << what;
    EXPECT_EQ(r.session->graph().nodes()[0]->attrs.get_string("nfuse.activation", ""),
              variant == 3 ? "GeluTanh" : "Gelu")
        << what;
    EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
  }
}

TEST(RecognizeGelu, LeavesOtherScales) {
  OnnxBuilder b = gelu(0);
  b.model().mutable_graph()->mutable_initializer(2)->set_float_data(0, 0.6f);  // "half" = 0.6
  EXPECT_TRUE(check_pass(b, recognize_gelu, "not_gelu").empty());
}

}  // namespace
}  // namespace nfuse::passes_test
