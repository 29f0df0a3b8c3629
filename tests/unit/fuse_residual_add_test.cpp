#include "passes/fuse_residual_add.h"

#include "ops/fused_epilogue.h"
#include "passes/fuse_activation.h"
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// x [1,4,5,5] -> Conv(3x3, pad 1) -> y; Add(y, x) -> s [-> Relu -> z]
OnnxBuilder residual_block(bool relu, bool swap_add) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4, 5, 5});
  random_initializer(b, "w", {4, 4, 3, 3}, 1);
  random_initializer(b, "bias", {4}, 2);
  set_ints_attr(b.node("Conv", {"x", "w", "bias"}, {"y"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Add", swap_add ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"y", "x"}, {"s"}, "add1");
  if (relu) b.node("Relu", {"s"}, {"z"}, "relu1");
  out(b, relu ? "z" : "s");
  return b;
}

TEST(FuseResidualAdd, FusesAddThenActivation) {
  for (bool swap : {false, true}) {
    auto both = [](ir::Graph& g, PassLog& log) {
      NFUSE_RETURN_IF_ERROR_PLAIN(fuse_residual_add(g, log));
      return fuse_activation(g, log);
    };
    std::unique_ptr<ir::Graph> after;
    auto lines = check_pass(residual_block(true, swap), both, "residual_relu", &after);
    ASSERT_TRUE(after);
    ASSERT_EQ(after->nodes().size(), 1u);
    const ir::Node& conv = *after->nodes()[0];
    EXPECT_EQ(conv.attrs.get_int(ops::kFusedResidualAttr, 0), 1);
    ASSERT_EQ(conv.implicit_inputs.size(), 1u);
    EXPECT_EQ(conv.implicit_inputs[0]->name, "x");
    EXPECT_EQ(conv.attrs.get_string(ops::kFusedActivationAttr, ""), "Relu");
    EXPECT_EQ(conv.output(0)->name, "z");
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], "fused Add 'add1' into Conv 'conv1' as residual 'x'");
    check_pass(residual_block(true, swap), both, "residual_relu");  // and on a Session
  }
}

TEST(FuseResidualAdd, ResidualProducedAfterTheConvIsReordered) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4, 5, 5});
  random_initializer(b, "w", {4, 4, 1, 1}, 1);
  random_initializer(b, "w2", {4, 4, 1, 1}, 3);
  b.node("Conv", {"x", "w"}, {"y"}, "conv1");
  b.node("Conv", {"x", "w2"}, {"y2"}, "conv2");
  b.node("Sigmoid", {"y2"}, {"r"}, "sig");
  b.node("Add", {"y", "r"}, {"s"}, "add1");
  out(b, "s");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, fuse_residual_add, "reorder", &after);
  EXPECT_EQ(lines.size(), 1u);
  check_pass(b, fuse_residual_add, "reorder");
}

TEST(FuseResidualAdd, BroadcastMultipleConsumersAndActivatedConvBlock) {
  {  // Add of a per-channel bias broadcasts: not a residual
    OnnxBuilder b;
    b.input("x", kF, {1, 4, 5, 5});
    random_initializer(b, "w", {4, 4, 1, 1}, 1);
    random_initializer(b, "cb", {4, 1, 1}, 2);
    b.node("Conv", {"x", "w"}, {"y"}, "conv1");
    b.node("Add", {"y", "cb"}, {"s"}, "add1");
    out(b, "s");
    EXPECT_TRUE(check_pass(b, fuse_residual_add, "broadcast").empty());
  }
  {  // the conv output also feeds another node
    OnnxBuilder b = residual_block(false, false);
    b.node("Relu", {"y"}, {"r"}, "other");
    out(b, "r");
    EXPECT_TRUE(check_pass(b, fuse_residual_add, "two_consumers").empty());
  }
  {  // Conv -> Relu fused first: the residual cannot go after the activation
    auto act_then_add = [](ir::Graph& g, PassLog& log) {
      NFUSE_RETURN_IF_ERROR_PLAIN(fuse_activation(g, log));
      PassLog residual;
      NFUSE_RETURN_IF_ERROR_PLAIN(fuse_residual_add(g, residual));
      EXPECT_TRUE(residual.empty());
      return ok_status();
    };
    OnnxBuilder b;
    b.input("x", kF, {1, 4, 5, 5});
    random_initializer(b, "w", {4, 4, 1, 1}, 1);
    b.node("Conv", {"x", "w"}, {"y"}, "conv1");
    b.node("Relu", {"y"}, {"r"}, "relu1");
    b.node("Add", {"r", "x"}, {"s"}, "add1");
    out(b, "s");
    check_pass(b, act_then_add, "activation_first");
  }
}

}  // namespace
}  // namespace nfuse::passes_test
