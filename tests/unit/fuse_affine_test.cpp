#include "passes/fuse_affine.h"

#include "ops/fused_epilogue.h"
#include "pass_test_util.h"
#include "passes/fuse_activation.h"

namespace nfuse::passes_test {
namespace {

// fuse_affine runs after fuse_activation in the pipeline, on the activations it attached.
Status activation_then_affine(ir::Graph& g, PassLog& log) {
  NFUSE_RETURN_IF_ERROR(fuse_activation(g, log), "fuse_activation");
  return fuse_affine(g, log);
}

struct AffineCase {
  const char* name;
  const char* producer;          // Conv | ConvTranspose | Gemm | MatMul
  bool mul, add;                 // the Mul by a and / or Add of b after the activation
  bool scalar_first;             // Mul(a, z) / Add(b, .) instead of Mul(z, a) / Add(., b)
  std::vector<int64_t> a_dims;   // the Mul's constant
  bool activation;               // a Relu between the producer and the affine
  std::vector<float> affine;     // expected nfuse.affine; empty: nothing fuses
};

class FuseAffine : public ::testing::TestWithParam<AffineCase> {};

// x -> P -> y [-> Relu -> z] [-> Mul a] [-> Add b] -> out, then fuse_activation and fuse_affine;
// check_pass compares the graph's outputs before and after on the ref backend.
TEST_P(FuseAffine, TakesScalarMulAndAddAfterTheActivation) {
  const AffineCase& c = GetParam();
  OnnxBuilder b;
  std::string p_out = "y";
  if (std::string(c.producer) == "Conv" || std::string(c.producer) == "ConvTranspose") {
    b.input("x", kF, {1, 4, 6, 5});
    random_initializer(b, "w", {4, 4, 3, 3}, 1);
    auto& n = b.node(c.producer, {"x", "w"}, {"y"}, "prod");
    set_ints_attr(n, "pads", {1, 1, 1, 1});
  } else if (std::string(c.producer) == "Gemm") {
    b.input("x", kF, {3, 6});
    random_initializer(b, "w", {6, 5}, 1);
    b.node("Gemm", {"x", "w"}, {"y"}, "prod");
  } else {
    b.input("x", kF, {2, 3, 6});
    random_initializer(b, "w", {6, 5}, 1);
    b.node("MatMul", {"x", "w"}, {"y"}, "prod");
  }
  std::string cur = "y";
  if (c.activation) {
    b.node("Relu", {"y"}, {"z"}, "act");
    cur = "z";
  }
  if (c.mul) {
    b.initializer("a", c.a_dims, std::vector<float>(static_cast<size_t>(numel(c.a_dims)), -1.5f));
    b.node("Mul", c.scalar_first ? std::vector<std::string>{"a", cur} : std::vector<std::string>{cur, "a"}, {"m"}, "scale");
    cur = "m";
  }
  if (c.add) {
    b.initializer("bb", {1}, {0.25f});
    b.node("Add", c.scalar_first ? std::vector<std::string>{"bb", cur} : std::vector<std::string>{cur, "bb"}, {"s"}, "shift");
    cur = "s";
  }
  out(b, cur);
  std::unique_ptr<ir::Graph> after;
  check_pass(b, activation_then_affine, c.name, &after);
  ASSERT_TRUE(after);
  const ir::Node* p = nullptr;
  for (const auto& n : after->nodes())
    if (n->op_type == c.producer) p = n.get();
  ASSERT_NE(p, nullptr);
  if (c.affine.empty()) {
    EXPECT_FALSE(p->attrs.has(ops::kFusedAffineAttr)) << c.name;
    return;
  }
  EXPECT_EQ(p->attrs.get_floats(ops::kFusedAffineAttr), c.affine) << c.name;
  EXPECT_EQ(count_ops(*after, "Mul") + count_ops(*after, "Add"), 0) << c.name;
  EXPECT_EQ(p->output(0)->name, cur) << c.name;  // the producer writes the graph's output
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FuseAffine,
    ::testing::Values(AffineCase{"conv_mul_add", "Conv", true, true, false, {1}, true, {-1.5f, 0.25f}},
                      AffineCase{"conv_scalar_first", "Conv", true, true, true, {}, true, {-1.5f, 0.25f}},
                      AffineCase{"conv_mul_only", "Conv", true, false, false, {1, 1, 1, 1}, true, {-1.5f, 0.0f}},
                      AffineCase{"conv_add_only", "Conv", false, true, false, {}, true, {1.0f, 0.25f}},
                      AffineCase{"conv_transpose", "ConvTranspose", true, true, false, {1}, true, {-1.5f, 0.25f}},
                      AffineCase{"gemm", "Gemm", true, true, false, {1}, true, {-1.5f, 0.25f}},
                      AffineCase{"matmul", "MatMul", true, true, false, {1}, true, {-1.5f, 0.25f}},
                      // No activation: fold_conv_mul_scale / fold_conv_add_bias's case, not this one.
                      AffineCase{"no_activation_stays", "Conv", true, true, false, {1}, false, {}},
                      // A per-channel Mul is no scalar: stays a Mul.
                      AffineCase{"per_channel_stays", "Conv", true, true, false, {1, 4, 1, 1}, true, {}},
                      // A one-element constant of higher rank would broadcast the output up a rank.
                      AffineCase{"rank_raising_stays", "MatMul", true, false, false, {1, 1, 1, 1}, true, {}}),
    [](const ::testing::TestParamInfo<AffineCase>& info) { return std::string(info.param.name); });

// The scaled value read by a second node (here: also a graph output) keeps its Mul.
TEST(FuseAffineBlocked, ScaledValueWithAnotherReader) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4, 6, 5});
  random_initializer(b, "w", {4, 4, 1, 1}, 1);
  b.node("Conv", {"x", "w"}, {"y"}, "prod");
  b.node("Relu", {"y"}, {"z"}, "act");
  b.node("Relu", {"z"}, {"z2"}, "other_reader");
  b.initializer("a", {1}, {2.0f});
  b.node("Mul", {"z", "a"}, {"m"}, "scale");
  out(b, "m");
  out(b, "z2");
  std::unique_ptr<ir::Graph> after;
  check_pass(b, activation_then_affine, "other reader", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "Mul"), 1);
}

// nfuse.affine is validated when read: two finite floats.
TEST(FuseAffineEpilogue, MalformedAttributeIsAnInvalidModel) {
  ir::Graph g;
  ir::Value* x = g.add_value("x", {ir::DType::kF32, ir::Shape::from_dims({1, 2, 3, 3})}).value();
  ir::Value* y = g.add_value("y", {ir::DType::kF32, ir::Shape::from_dims({1, 2, 3, 3})}).value();
  ir::Node* n = g.add_node("Relu", "r", {x}, {y});
  for (const std::vector<float>& bad : {std::vector<float>{1.0f}, std::vector<float>{1.0f, 2.0f, 3.0f},
                                        std::vector<float>{std::numeric_limits<float>::infinity(), 0.0f}}) {
    n->attrs.set(ops::kFusedAffineAttr, bad);
    auto e = ops::read_fused_epilogue(*n);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("nfuse.affine"), std::string::npos) << e.status().to_string();
  }
  n->attrs.set(ops::kFusedAffineAttr, std::vector<float>{2.0f, -1.0f});
  auto e = ops::read_fused_epilogue(*n);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->scale, 2.0f);
  EXPECT_EQ(e->shift, -1.0f);
  EXPECT_TRUE(ops::has_fused_epilogue(*n));
}

}  // namespace
}  // namespace nfuse::passes_test
