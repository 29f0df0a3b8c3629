// lift_1d_to_2d: 1-D Conv, ConvTranspose, MaxPool and AveragePool become 2-D ones over a 1 x L
// plane, with the same results on the ref interpreter and session; through the whole pipeline
// on the cpu backend they then run on its optimized kernels (no reference node), matching ref.
#include "passes/lift_1d_to_2d.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

struct Lift1dCase {
  const char* name;
  const char* op;
  int64_t cin, cout, group, kernel, stride, dilation, pad_begin, pad_end, length;
  bool bias;
};

void build(OnnxBuilder& b, const Lift1dCase& c) {
  b.input("x", kF, {2, c.cin, c.length});
  std::vector<std::string> ins = {"x"};
  const std::string op = c.op;
  if (op == "Conv" || op == "ConvTranspose") {
    const std::vector<int64_t> w = op == "Conv" ? std::vector<int64_t>{c.cout, c.cin / c.group, c.kernel}
                                                : std::vector<int64_t>{c.cin, c.cout / c.group, c.kernel};
    random_initializer(b, "w", w, 51);
    ins.push_back("w");
    if (c.bias) {
      random_initializer(b, "b", {c.cout}, 52);
      ins.push_back("b");
    }
  }
  auto& n = b.node(c.op, ins, {"y"}, "layer");
  set_ints_attr(n, "kernel_shape", {c.kernel});
  set_ints_attr(n, "strides", {c.stride});
  set_ints_attr(n, "pads", {c.pad_begin, c.pad_end});
  if (op == "Conv" || op == "ConvTranspose") {
    set_int_attr(n, "group", c.group);
    set_ints_attr(n, "dilations", {c.dilation});
  }
  b.node("Relu", {"y"}, {"z"}, "act");
  out(b, "z");
}

class Lift1dTo2d : public ::testing::TestWithParam<Lift1dCase> {};

TEST_P(Lift1dTo2d, SameResultsAs1dAndOptimizedKernelsOnCpu) {
  const Lift1dCase& c = GetParam();
  OnnxBuilder b;
  build(b, c);
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, lift_1d_to_2d, c.name, &after);
  ASSERT_TRUE(after);
  ASSERT_EQ(lines.size(), 1u) << c.name;
  const ir::Node* lifted = find_op(*after, c.op);
  ASSERT_TRUE(lifted);
  EXPECT_EQ(lifted->input(0)->type.shape.rank(), 4) << c.name;
  EXPECT_EQ(count_ops(*after, "Unsqueeze"), 1);
  EXPECT_EQ(count_ops(*after, "Squeeze"), 1);

  // The default pipeline on cpu: the activation fuses into the conv first, then the layer is
  // lifted and runs on an optimized kernel; the session matches the ref interpreter.
  const PipelineRun r = run_pipeline_against_ref(b, "cpu", c.name);
  ASSERT_TRUE(r.session);
  EXPECT_GE(r.session->pass_report().num_changes("lift_1d_to_2d"), 1u) << c.name;
  EXPECT_TRUE(r.reference_nodes.empty()) << c.name << ": " << r.reference_nodes.front();
  // Under auto the fusion backend may take the lifted 1 x L layers: same results.
  for (const char* backend : {"fusion", "auto"}) EXPECT_TRUE(run_pipeline_against_ref(b, backend, c.name).session);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Lift1dTo2d,
    ::testing::Values(Lift1dCase{"conv_k3_pad1_bias", "Conv", 8, 16, 1, 3, 1, 1, 1, 1, 50, true},
                      Lift1dCase{"conv_strided_dilated", "Conv", 6, 10, 1, 5, 2, 2, 3, 1, 61, false},
                      Lift1dCase{"conv_grouped", "Conv", 8, 12, 4, 3, 1, 1, 1, 1, 40, true},
                      Lift1dCase{"conv_depthwise", "Conv", 16, 16, 16, 7, 1, 1, 3, 3, 77, true},
                      // An STFT as a Conv: 512 taps at hop 160, one input channel.
                      Lift1dCase{"conv_stft_512_hop_160", "Conv", 1, 66, 1, 512, 160, 1, 0, 0, 4000, false},
                      Lift1dCase{"conv_transpose_upsample", "ConvTranspose", 8, 6, 1, 4, 2, 1, 1, 1, 30, true},
                      Lift1dCase{"max_pool", "MaxPool", 5, 5, 1, 3, 2, 1, 1, 0, 33, false},
                      Lift1dCase{"average_pool", "AveragePool", 5, 5, 1, 4, 2, 1, 0, 0, 32, false}),
    [](const ::testing::TestParamInfo<Lift1dCase>& info) { return std::string(info.param.name); });

// A residual folded into the 1-D conv before lifting keeps its operand, reshaped alongside.
TEST(Lift1dTo2dResidual, AFusedResidualOperandIsLiftedToo) {
  OnnxBuilder b;
  b.input("x", kF, {1, 8, 20});
  random_initializer(b, "w", {8, 8, 3}, 61);
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  set_ints_attr(conv, "pads", {1, 1});
  b.node("Add", {"c", "x"}, {"y"}, "residual");
  b.node("Relu", {"y"}, {"z"}, "act");
  out(b, "z");
  for (const char* backend : {"ref", "cpu"}) {
    const PipelineRun r = run_pipeline_against_ref(b, backend, "residual");
    ASSERT_TRUE(r.session);
    EXPECT_EQ(r.session->pass_report().num_changes("fuse_residual_add"), 1u);
    EXPECT_EQ(r.session->pass_report().num_changes("lift_1d_to_2d"), 1u);
  }
}

}  // namespace
}  // namespace nfuse::passes_test
