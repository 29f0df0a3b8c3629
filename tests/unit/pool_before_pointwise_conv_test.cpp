#include "passes/pool_before_pointwise_conv.h"

#include "pass_test_util.h"
#include "passes/fuse_activation.h"

namespace nfuse::passes_test {
namespace {

struct PoolCase {
  const char* name;
  int64_t cin, cout, group, kernel, stride, pad;
  bool bias;
  bool conv_has_other_reader;  // the conv's output also feeds a Mul (a squeeze-excitation block)
  bool moves;
};

class PoolBeforePointwiseConv : public ::testing::TestWithParam<PoolCase> {};

// x -> Conv -> y -> GlobalAveragePool -> s; optionally z = y * s (the SE block's rescale).
TEST_P(PoolBeforePointwiseConv, MovesOnlyWherePoolingCommutesWithTheConv) {
  const PoolCase& c = GetParam();
  OnnxBuilder b;
  b.input("x", kF, {2, c.cin, 7, 5});
  random_initializer(b, "w", {c.cout, c.cin / c.group, c.kernel, c.kernel}, 41);
  std::vector<std::string> ins = {"x", "w"};
  if (c.bias) {
    random_initializer(b, "b", {c.cout}, 42);
    ins.push_back("b");
  }
  auto& conv = b.node("Conv", ins, {"y"}, "widen");
  set_int_attr(conv, "group", c.group);
  set_ints_attr(conv, "strides", {c.stride, c.stride});
  set_ints_attr(conv, "pads", {c.pad, c.pad, c.pad, c.pad});
  b.node("GlobalAveragePool", {"y"}, {"s"}, "squeeze");
  out(b, "s");
  if (c.conv_has_other_reader) {
    b.node("Mul", {"y", "s"}, {"z"}, "excite");
    out(b, "z");
  }
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, pool_before_pointwise_conv, c.name, &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(lines.size(), c.moves ? 1u : 0u) << c.name;
  // Moved: a second Conv runs on the pooled input; the pool reads x, not y.
  EXPECT_EQ(count_ops(*after, "Conv"), c.moves ? 2 : 1) << c.name;
  int pools_of_x = 0;
  for (const auto& n : after->nodes())
    if (n->op_type == "GlobalAveragePool" && n->input(0)->name == "x") ++pools_of_x;
  EXPECT_EQ(pools_of_x, c.moves ? 1 : 0) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PoolBeforePointwiseConv,
    ::testing::Values(PoolCase{"widening_with_bias", 3, 8, 1, 1, 1, 0, true, true, true},
                      PoolCase{"widening_no_bias_sole_reader", 3, 8, 1, 1, 1, 0, false, false, true},
                      PoolCase{"grouped_widening", 4, 8, 2, 1, 1, 0, true, true, true},
                      // Pooling the wider input would read more, not less.
                      PoolCase{"narrowing_stays", 8, 3, 1, 1, 1, 0, true, true, false},
                      // A strided conv samples pixels and a padded one adds border pixels: the
                      // mean no longer commutes.
                      PoolCase{"strided_stays", 3, 8, 1, 1, 2, 0, true, true, false},
                      PoolCase{"padded_stays", 3, 8, 1, 1, 1, 1, true, true, false},
                      PoolCase{"3x3_stays", 3, 8, 1, 3, 1, 1, true, true, false}),
    [](const ::testing::TestParamInfo<PoolCase>& info) { return std::string(info.param.name); });

// A conv with a fused activation is no longer linear: once fuse_activation has taken the Relu
// (as it would if this pass ran after it), the pool reads the activated conv and must stay.
// check_pass compares the outputs, so moving it would fail.
Status activation_then_pool_move(ir::Graph& g, PassLog& log) {
  NFUSE_RETURN_IF_ERROR(fuse_activation(g, log), "fuse_activation");
  return pool_before_pointwise_conv(g, log);
}

TEST(PoolBeforePointwiseConvBlocked, ConvWithAFusedActivation) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4, 6, 6});
  random_initializer(b, "w", {16, 4, 1, 1}, 43);
  b.node("Conv", {"x", "w"}, {"y"}, "widen");
  b.node("Relu", {"y"}, {"r"}, "act");
  b.node("GlobalAveragePool", {"r"}, {"s"}, "squeeze");
  b.node("Mul", {"r", "s"}, {"z"}, "excite");
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, activation_then_pool_move, "fused activation", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "Relu"), 0);  // fuse_activation did take it
  EXPECT_EQ(count_ops(*after, "Conv"), 1);
  EXPECT_EQ(count_ops(*after, "GlobalAveragePool"), 1);
}

}  // namespace
}  // namespace nfuse::passes_test
