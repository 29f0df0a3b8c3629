#include "passes/fold_batch_norm.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// A BatchNormalization over `c` channels of `in`, with non-trivial statistics.
::onnx::NodeProto& add_bn(OnnxBuilder& b, const std::string& in, const std::string& out, int64_t c, uint32_t seed,
                          float eps, const std::string& name = "bn1") {
  random_initializer(b, name + "_scale", {c}, seed, 0.5f, 1.5f);
  random_initializer(b, name + "_bias", {c}, seed + 1);
  random_initializer(b, name + "_mean", {c}, seed + 2);
  random_initializer(b, name + "_var", {c}, seed + 3, 0.001f, 2.0f);
  auto& n = b.node("BatchNormalization", {in, name + "_scale", name + "_bias", name + "_mean", name + "_var"}, {out},
                   name);
  set_float_attr(n, "epsilon", eps);
  return n;
}

struct ConvCase {
  const char* name;
  bool transpose;
  int64_t cin, cout, group;
  bool bias;
  float eps;
};

class FoldBatchNormConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(FoldBatchNormConv, FoldsIntoWeightsAndBias) {
  const ConvCase& c = GetParam();
  OnnxBuilder b;
  b.input("x", kF, {1, c.cin, 7, 6});
  std::vector<int64_t> wdims = c.transpose ? std::vector<int64_t>{c.cin, c.cout / c.group, 3, 3}
                                           : std::vector<int64_t>{c.cout, c.cin / c.group, 3, 3};
  random_initializer(b, "w", wdims, 11);
  std::vector<std::string> ins = {"x", "w"};
  if (c.bias) {
    random_initializer(b, "b", {c.cout}, 12);
    ins.push_back("b");
  }
  auto& conv = b.node(c.transpose ? "ConvTranspose" : "Conv", ins, {"y"}, "conv1");
  set_int_attr(conv, "group", c.group);
  set_ints_attr(conv, "pads", {1, 1, 1, 1});
  if (c.transpose) set_ints_attr(conv, "strides", {2, 2});
  add_bn(b, "y", "z", c.cout, 20, c.eps);
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fold_batch_norm, c.name, &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "BatchNormalization"), 0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], std::string("folded BatchNormalization 'bn1' into ") + (c.transpose ? "ConvTranspose" : "Conv") +
                          " 'conv1'");
  const ir::Node* p = find_op(*after, c.transpose ? "ConvTranspose" : "Conv");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->output(0)->name, "z");
  ASSERT_TRUE(p->input(2) && p->input(2)->constant);
  EXPECT_EQ(p->input(2)->constant->numel(), c.cout);
  // The session path too.
  check_pass(b, fold_batch_norm, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FoldBatchNormConv,
    ::testing::Values(ConvCase{"conv_bias", false, 3, 5, 1, true, 1e-5f}, ConvCase{"conv_no_bias", false, 4, 6, 1, false, 1e-3f},
                      ConvCase{"conv_grouped", false, 4, 6, 2, true, 0.1f},
                      ConvCase{"conv_depthwise", false, 8, 8, 8, false, 1e-5f},
                      ConvCase{"conv_3_to_4", false, 3, 4, 1, true, 1e-5f},
                      ConvCase{"conv_transpose_plain", true, 3, 4, 1, true, 1e-5f},
                      ConvCase{"conv_transpose_groups", true, 4, 6, 2, false, 1e-2f},
                      ConvCase{"conv_transpose_depthwise", true, 6, 6, 6, true, 1e-5f}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

TEST(FoldBatchNorm, GemmTransBWithBias) {
  OnnxBuilder b;
  b.input("x", kF, {3, 5});
  random_initializer(b, "w", {4, 5}, 1);
  random_initializer(b, "c", {4}, 2);
  auto& g = b.node("Gemm", {"x", "w", "c"}, {"y"}, "fc");
  set_int_attr(g, "transB", 1);
  set_float_attr(g, "alpha", 0.7f);
  set_float_attr(g, "beta", 0.5f);
  add_bn(b, "y", "z", 4, 3, 1e-4f);
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fold_batch_norm, "gemm_transB", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "BatchNormalization"), 0);
  EXPECT_EQ(lines, std::vector<std::string>{"folded BatchNormalization 'bn1' into Gemm 'fc'"});
}

TEST(FoldBatchNorm, GemmWithoutBiasAndMatrixBias) {
  for (bool with_c : {false, true}) {
    OnnxBuilder b;
    b.input("x", kF, {3, 5});
    random_initializer(b, "w", {5, 4}, 1);
    std::vector<std::string> ins = {"x", "w"};
    if (with_c) {
      random_initializer(b, "c", {3, 1}, 2);
      ins.push_back("c");
    }
    auto& g = b.node("Gemm", ins, {"y"}, "fc");
    set_float_attr(g, "beta", 2.0f);
    add_bn(b, "y", "z", 4, 3, 1e-5f);
    out(b, "z");
    std::unique_ptr<ir::Graph> after;
    check_pass(b, fold_batch_norm, with_c ? "gemm_matrix_bias" : "gemm_no_bias", &after);
    ASSERT_TRUE(after);
    EXPECT_EQ(count_ops(*after, "BatchNormalization"), 0);
  }
}

TEST(FoldBatchNorm, StandaloneAndSharedProducerStay) {
  OnnxBuilder b;
  b.input("x", kF, {1, 3, 5, 5});
  add_bn(b, "x", "s", 3, 1, 1e-5f, "bn_alone");
  random_initializer(b, "w", {3, 3, 1, 1}, 2);
  b.node("Conv", {"s", "w"}, {"y"}, "conv1");
  add_bn(b, "y", "z", 3, 5, 1e-5f, "bn_shared");
  b.node("Relu", {"y"}, {"r"}, "relu_other_consumer");
  out(b, "z");
  out(b, "r");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fold_batch_norm, "blocked", &after);
  ASSERT_TRUE(after);
  EXPECT_TRUE(lines.empty());
  EXPECT_EQ(count_ops(*after, "BatchNormalization"), 2);
}

TEST(FoldBatchNorm, SharedWeightKeepsItsValueForTheOtherConv) {
  OnnxBuilder b;
  b.input("x", kF, {1, 3, 5, 5});
  random_initializer(b, "w", {3, 3, 3, 3}, 2);
  b.node("Conv", {"x", "w"}, {"y1"}, "conv1");
  b.node("Conv", {"x", "w"}, {"y2"}, "conv2");
  add_bn(b, "y1", "z", 3, 5, 1e-5f);
  out(b, "z");
  out(b, "y2");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fold_batch_norm, "shared_weight", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_EQ(count_ops(*after, "BatchNormalization"), 0);
}

TEST(FoldBatchNorm, GraphOutputBetweenConvAndBnBlocks) {
  OnnxBuilder b;
  b.input("x", kF, {1, 2, 4, 4});
  random_initializer(b, "w", {2, 2, 1, 1}, 2);
  b.node("Conv", {"x", "w"}, {"y"}, "conv1");
  add_bn(b, "y", "z", 2, 5, 1e-5f);
  out(b, "z");
  out(b, "y");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fold_batch_norm, "graph_output", &after);
  EXPECT_TRUE(lines.empty());
}

}  // namespace
}  // namespace nfuse::passes_test
