#include "passes/factor_residual_scale.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

struct ScaleCase {
  const char* name;
  std::vector<int64_t> s_dims;  // the scale's dims; x is [2, 3, 4, 5]
  bool scale_first;             // Mul(s, x) rather than Mul(x, s)
  bool x_first;                 // Add(x, m) rather than Add(m, x)
  bool mul_read_elsewhere;      // the rescaled copy is also a graph output
  bool factors;
};

class FactorResidualScale : public ::testing::TestWithParam<ScaleCase> {};

TEST_P(FactorResidualScale, FactorsEveryBroadcastOfAMulReadOnlyByTheAdd) {
  const ScaleCase& c = GetParam();
  OnnxBuilder b;
  b.input("x", kF, {2, 3, 4, 5});
  b.input("s", kF, c.s_dims);
  b.node("Mul", c.scale_first ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"}, {"m"}, "rescale");
  b.node("Add", c.x_first ? std::vector<std::string>{"x", "m"} : std::vector<std::string>{"m", "x"}, {"y"}, "residual");
  out(b, "y");
  if (c.mul_read_elsewhere) out(b, "m");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, factor_residual_scale, c.name, &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(lines.size(), c.factors ? 1u : 0u) << c.name;
  if (!c.factors) return;
  // One Mul on x, by the scale plus one; x is read once.
  ASSERT_EQ(count_ops(*after, "Mul"), 1);
  ASSERT_EQ(count_ops(*after, "Add"), 1);
  const ir::Value* x = after->find_value("x");
  ASSERT_NE(x, nullptr);
  ASSERT_EQ(x->consumers.size(), 1u);
  EXPECT_EQ(x->consumers[0]->op_type, "Mul");
  EXPECT_EQ(x->consumers[0]->output(0)->name, "y");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FactorResidualScale,
    ::testing::Values(ScaleCase{"per_channel", {1, 3, 1, 1}, false, false, false, true},
                      ScaleCase{"per_sample_and_channel", {2, 3, 1, 1}, true, true, false, true},
                      ScaleCase{"scalar", {}, false, true, false, true},
                      ScaleCase{"trailing_axis", {5}, true, false, false, true},
                      ScaleCase{"same_shape", {2, 3, 4, 5}, false, false, false, true},
                      // s widens the result beyond x's shape: x * (s + 1) widens the same way.
                      ScaleCase{"widening_scale", {3, 2, 3, 4, 5}, false, false, false, true},
                      // The rescaled copy has another reader: it must stay.
                      ScaleCase{"copy_read_elsewhere_stays", {1, 3, 1, 1}, false, false, true, false}),
    [](const ::testing::TestParamInfo<ScaleCase>& info) { return std::string(info.param.name); });

// Add(Mul(x, s), z) with z not x is no residual of x: untouched.
TEST(FactorResidualScaleOther, AddOfAnotherValueStays) {
  OnnxBuilder b;
  b.input("x", kF, {1, 3, 4, 4});
  b.input("s", kF, {1, 3, 1, 1});
  b.input("z", kF, {1, 3, 4, 4});
  b.node("Mul", {"x", "s"}, {"m"}, "rescale");
  b.node("Add", {"m", "z"}, {"y"}, "sum");
  out(b, "y");
  auto lines = check_pass(b, factor_residual_scale, "other");
  EXPECT_TRUE(lines.empty());
}

// Opset 6: Mul(x, s, broadcast=1, axis=1) lines a [C] scale up with the channels; the new Mul
// would broadcast NumPy-style (along W), so the pass leaves such nodes alone. W == C here, so a
// wrong broadcast would not even fail on shapes.
TEST(FactorResidualScaleOther, LegacyBroadcastStays) {
  OnnxBuilder b(6);
  b.input("x", kF, {1, 4, 3, 4});
  b.input("s", kF, {4});
  auto& mul = b.node("Mul", {"x", "s"}, {"m"}, "rescale");
  set_int_attr(mul, "broadcast", 1);
  set_int_attr(mul, "axis", 1);
  b.node("Add", {"m", "x"}, {"y"}, "residual");
  out(b, "y");
  auto lines = check_pass(b, factor_residual_scale, "legacy broadcast");
  EXPECT_TRUE(lines.empty());
}

}  // namespace
}  // namespace nfuse::passes_test
