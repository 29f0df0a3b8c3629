#include "passes/fold_conv_add_bias.h"
#include "passes/fold_conv_mul_scale.h"

#include <tuple>

#include "pass_test_util.h"
#include "passes/pass_manager.h"

namespace nfuse::passes_test {
namespace {

struct BiasCase {
  const char* name;
  bool transpose;
  bool conv_bias;
  std::vector<int64_t> c_dims;  // the added constant's dims
  bool constant_first;          // Add(c, y) instead of Add(y, c)
  bool folds;
};

class FoldConvAddBias : public ::testing::TestWithParam<BiasCase> {};

TEST_P(FoldConvAddBias, FoldsPerChannelConstants) {
  const BiasCase& c = GetParam();
  const int64_t cin = 3, cout = 5;
  OnnxBuilder b;
  b.input("x", kF, {2, cin, 7, 6});
  random_initializer(b, "w", c.transpose ? std::vector<int64_t>{cin, cout, 3, 3} : std::vector<int64_t>{cout, cin, 3, 3},
                     31);
  std::vector<std::string> ins = {"x", "w"};
  if (c.conv_bias) {
    random_initializer(b, "b", {cout}, 32);
    ins.push_back("b");
  }
  auto& conv = b.node(c.transpose ? "ConvTranspose" : "Conv", ins, {"y"}, "conv1");
  set_ints_attr(conv, "pads", {1, 1, 1, 1});
  random_initializer(b, "c", c.c_dims, 33);
  b.node("Add", c.constant_first ? std::vector<std::string>{"c", "y"} : std::vector<std::string>{"y", "c"}, {"z"},
         "bias_add");
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fold_conv_add_bias, c.name, &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "Add"), c.folds ? 0 : 1) << c.name;
  EXPECT_EQ(lines.size(), c.folds ? 1u : 0u) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FoldConvAddBias,
    ::testing::Values(BiasCase{"nchw_channel", false, false, {1, 5, 1, 1}, false, true},
                      BiasCase{"chw_channel_with_bias", false, true, {5, 1, 1}, false, true},
                      BiasCase{"constant_first", false, false, {1, 5, 1, 1}, true, true},
                      BiasCase{"scalar", false, true, {1}, false, true},
                      BiasCase{"conv_transpose", true, true, {1, 5, 1, 1}, false, true},
                      // Not per channel: varies along W, so it is no bias and must stay.
                      BiasCase{"per_column_stays", false, false, {1, 1, 1, 6}, false, false},
                      // [6] right-aligns with W (6): a per-column add, not a bias; kept.
                      BiasCase{"vector_along_width_stays", false, false, {6}, false, false}),
    [](const ::testing::TestParamInfo<BiasCase>& info) { return std::string(info.param.name); });

TEST(FoldConvAddBias, ConvUsedTwiceStays) {
  OnnxBuilder b;
  b.input("x", kF, {1, 3, 5, 5});
  random_initializer(b, "w", {4, 3, 1, 1}, 41);
  random_initializer(b, "c", {1, 4, 1, 1}, 42);
  b.node("Conv", {"x", "w"}, {"y"}, "conv1");
  b.node("Add", {"y", "c"}, {"z"}, "bias_add");
  b.node("Relu", {"y"}, {"r"}, "other_use");
  out(b, "z");
  out(b, "r");
  std::unique_ptr<ir::Graph> after;
  check_pass(b, fold_conv_add_bias, "conv used twice", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "Add"), 1);
}

// fold_conv_mul_scale: per-channel and scalar scales, constant on either side, with a bias.
TEST(FoldConvMulScale, FoldsPerChannelAndScalarScales) {
  for (auto [name, dims, first] : {std::tuple{"per_channel", std::vector<int64_t>{1, 4, 1, 1}, false},
                                   std::tuple{"scalar_first", std::vector<int64_t>{1}, true},
                                   std::tuple{"per_row_stays", std::vector<int64_t>{1, 1, 5, 1}, false}}) {
    OnnxBuilder b;
    b.input("x", kF, {1, 3, 5, 5});
    random_initializer(b, "w", {4, 3, 3, 3}, 61);
    random_initializer(b, "b", {4}, 62);
    random_initializer(b, "s", dims, 63);
    auto& conv = b.node("Conv", {"x", "w", "b"}, {"y"}, "conv1");
    set_ints_attr(conv, "pads", {1, 1, 1, 1});
    b.node("Mul", first ? std::vector<std::string>{"s", "y"} : std::vector<std::string>{"y", "s"}, {"z"}, "scale");
    out(b, "z");
    std::unique_ptr<ir::Graph> after;
    check_pass(b, fold_conv_mul_scale, name, &after);
    ASSERT_TRUE(after);
    EXPECT_EQ(count_ops(*after, "Mul"), std::string(name) == "per_row_stays" ? 1 : 0) << name;
  }
}

// The PaddleOCR detector's form: Conv -> Mul(s) -> Add(t) (an exported BatchNorm) ->
// x * Clip(x + 3, 0, 6) / 6. The whole chain becomes one Conv with a fused HardSwish.
TEST(FoldConvAddBias, LetsPaddleHardSwishFuse) {
  OnnxBuilder b(11);
  b.input("x", kF, {1, 3, 8, 8});
  random_initializer(b, "w", {6, 3, 3, 3}, 51);
  random_initializer(b, "bias", {1}, 52);
  random_initializer(b, "scale", {1}, 53, 0.5f, 1.5f);
  b.initializer("three", {}, {3.0f}).initializer("zero", {}, {0.0f}).initializer("six", {}, {6.0f});
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv1");
  set_ints_attr(conv, "pads", {1, 1, 1, 1});
  b.node("Mul", {"scale", "c"}, {"cs"}, "bn_scale");
  b.node("Add", {"cs", "bias"}, {"y"}, "bn_shift");
  b.node("Add", {"y", "three"}, {"y3"}, "plus3");
  b.node("Clip", {"y3", "zero", "six"}, {"clipped"}, "clip");
  b.node("Mul", {"y", "clipped"}, {"m"}, "mul");
  b.node("Div", {"m", "six"}, {"z"}, "div");
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto optimize_all = [](ir::Graph& g, PassLog& log) -> Status {
    OptimizeOptions o;
    o.evaluator = ref_evaluator();
    o.verify_each = true;
    NFUSE_ASSIGN_OR_RETURN(PassReport r, optimize(g, o));
    for (const std::string& line : r.lines()) log.add(line);
    return ok_status();
  };
  auto lines = check_pass(b, optimize_all, "paddle hardswish", &after);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->nodes().size(), 1u) << "expected one fused Conv";
  EXPECT_EQ(after->nodes()[0]->op_type, "Conv");
  EXPECT_EQ(after->nodes()[0]->attrs.get_string("nfuse.activation", ""), "HardSwish");
}

}  // namespace
}  // namespace nfuse::passes_test
