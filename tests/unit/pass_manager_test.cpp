#include "passes/pass_manager.h"

#include "ops/fused_epilogue.h"
#include "passes/eliminate_dead_code.h"
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// conv1 -> bn1 -> Identity -> Relu, a second head, and a shape chain feeding a Reshape.
OnnxBuilder small_net() {
  OnnxBuilder b(13);
  b.input("x", kF, {1, 3, 6, 6});
  random_initializer(b, "w", {4, 3, 3, 3}, 1);
  set_ints_attr(b.node("Conv", {"x", "w"}, {"y"}, "conv1"), "pads", {1, 1, 1, 1});
  random_initializer(b, "s", {4}, 2, 0.5f, 1.5f);
  random_initializer(b, "b", {4}, 3);
  random_initializer(b, "m", {4}, 4);
  random_initializer(b, "v", {4}, 5, 0.1f, 2.0f);
  b.node("BatchNormalization", {"y", "s", "b", "m", "v"}, {"bn"}, "bn1");
  b.node("Identity", {"bn"}, {"bn_id"}, "id");
  b.node("Relu", {"bn_id"}, {"r"}, "relu1");
  b.node("Flatten", {"r"}, {"logits"}, "flatten");
  b.node("Sigmoid", {"x"}, {"aux"}, "aux_head");
  out(b, "logits");
  out(b, "aux");
  return b;
}

OptimizeOptions test_options() {
  OptimizeOptions o;
  o.evaluator = ref_evaluator();
  o.verify_each = true;
  return o;
}

TEST(Optimize, RunsThePipelineAndReportsEachRewrite) {
  auto opt = [](ir::Graph& g, PassLog& log) -> Status {
    auto report = optimize(g, test_options());
    if (!report.ok()) return report.status();
    for (const std::string& l : report->lines()) log.add(l);
    return ok_status();
  };
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(small_net(), opt, "optimize", &after);
  ASSERT_TRUE(after);
  auto has = [&](const std::string& l) { return std::find(lines.begin(), lines.end(), l) != lines.end(); };
  EXPECT_TRUE(has("fold_batch_norm: folded BatchNormalization 'bn1' into Conv 'conv1'"));
  EXPECT_TRUE(has("fuse_activation: fused Relu 'relu1' into Conv 'conv1' as Relu"));
  EXPECT_EQ(count_ops(*after, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(*after, "Identity"), 0);
  EXPECT_EQ(count_ops(*after, "Relu"), 0);
  EXPECT_EQ(find_op(*after, "Conv")->attrs.get_string(ops::kFusedActivationAttr, ""), "Relu");
  check_pass(small_net(), opt, "optimize");
}

TEST(Optimize, OutputFilterKeepsOnlyWhatIsAskedFor) {
  auto g = load(small_net());
  ASSERT_TRUE(g);
  OptimizeOptions o = test_options();
  o.outputs = {"aux"};
  auto report = optimize(*g, o);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name, "aux");
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0]->op_type, "Sigmoid");
  EXPECT_EQ(g->inputs().size(), 1u);
  EXPECT_GE(report->num_changes("eliminate_dead_code"), 2u);
}

TEST(Optimize, UnknownOutputOrPassIsAClearError) {
  auto g = load(small_net());
  ASSERT_TRUE(g);
  OptimizeOptions o = test_options();
  o.outputs = {"aux", "nope"};
  auto report = optimize(*g, o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("unknown output 'nope': the model's outputs are 'logits', 'aux'"),
            std::string::npos)
      << report.status().message();
  o.outputs.clear();
  o.disabled = {"fold_everything"};
  auto bad_pass = optimize(*g, o);
  ASSERT_FALSE(bad_pass.ok());
  EXPECT_NE(bad_pass.status().message().find("unknown pass 'fold_everything'"), std::string::npos);
}

TEST(Optimize, DisabledPassesDoNotRun) {
  auto g = load(small_net());
  ASSERT_TRUE(g);
  OptimizeOptions o = test_options();
  o.disabled = {"fuse_activation", "fold_batch_norm"};
  auto report = optimize(*g, o);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(count_ops(*g, "BatchNormalization"), 1);
  EXPECT_EQ(count_ops(*g, "Relu"), 1);
  EXPECT_EQ(report->num_changes("fold_batch_norm"), 0u);
}

TEST(EliminateDeadCode, RemovesUnusedNodesAndInitializers) {
  OnnxBuilder b;
  b.input("x", kF, {2, 3});
  random_initializer(b, "w", {3, 3}, 1);
  b.node("MatMul", {"x", "w"}, {"unused"}, "dead_mm");
  b.node("Relu", {"unused"}, {"unused2"}, "dead_relu");
  b.node("Sigmoid", {"x"}, {"z"}, "live");
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto dce = [](ir::Graph& g, PassLog& log) { return eliminate_dead_code(g, {}, log); };
  auto lines = check_pass(b, dce, "dce", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->nodes().size(), 1u);
  EXPECT_EQ(after->find_value("w"), nullptr);
  EXPECT_EQ(lines, std::vector<std::string>{"removed 2 nodes no graph output needs: MatMul 'dead_mm', Relu 'dead_relu'"});
}

}  // namespace
}  // namespace nfuse::passes_test
