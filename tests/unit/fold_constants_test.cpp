#include "passes/fold_constants.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

void add_i64(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

Status fold_with_ref(ir::Graph& g, PassLog& log) { return fold_constants(g, {ref_evaluator()}, log); }

// PyTorch's x.view(x.size(0), -1): Shape -> Gather(0) -> Unsqueeze -> Concat(., [-1]) -> Reshape.
OnnxBuilder flatten_chain() {
  OnnxBuilder b(13);
  b.input("x", kF, {2, 3, 4});
  add_i64(b, "zero", {}, {0});
  add_i64(b, "axes0", {1}, {0});
  add_i64(b, "minus1", {1}, {-1});
  b.node("Shape", {"x"}, {"shape"}, "shape");
  b.node("Gather", {"shape", "zero"}, {"n"}, "gather");
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze");
  set_int_attr(b.node("Concat", {"n1", "minus1"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"z"}, "reshape");
  out(b, "z");
  return b;
}

TEST(FoldConstants, FoldsPyTorchShapeChainsWhenShapesAreStatic) {
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(flatten_chain(), fold_with_ref, "flatten", &after);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->nodes().size(), 1u);
  const ir::Node& r = *after->nodes()[0];
  EXPECT_EQ(r.op_type, "Reshape");
  ASSERT_TRUE(r.input(1)->constant);
  EXPECT_EQ(r.input(1)->constant->to_int_vector(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(lines.size(), 4u);
  check_pass(flatten_chain(), fold_with_ref, "flatten");
}

TEST(FoldConstants, SymbolicBatchKeepsTheShapeOp) {
  OnnxBuilder b = flatten_chain();
  b.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  auto g = load(b);
  ASSERT_TRUE(g);
  PassLog log;
  ASSERT_TRUE(fold_with_ref(*g, log).ok());
  EXPECT_EQ(count_ops(*g, "Shape"), 1);
  EXPECT_TRUE(g->verify().ok());
}

TEST(FoldConstants, FoldsArithmeticOnWeightsButNotPastTheCap) {
  OnnxBuilder b(13);
  b.input("x", kF, {2, 3});
  random_initializer(b, "w", {3}, 1);
  b.initializer("two", {}, {2.0f});
  b.node("Mul", {"w", "two"}, {"w2"}, "scale_w");
  b.node("Add", {"x", "w2"}, {"y"}, "add");
  add_i64(b, "big", {2}, {4096, 2048});
  b.node("ConstantOfShape", {"big"}, {"zeros"}, "zeros");
  b.node("ReduceSum", {"zeros"}, {"s"}, "sum");  // keepdims: [1, 1]
  b.node("Add", {"y", "s"}, {"z"}, "add2");
  out(b, "z");
  auto g = load(b);
  ASSERT_TRUE(g);
  PassLog log;
  ASSERT_TRUE(fold_constants(*g, {ref_evaluator(), int64_t{1} << 20}, log).ok());
  EXPECT_EQ(count_ops(*g, "Mul"), 0);
  EXPECT_EQ(count_ops(*g, "ConstantOfShape"), 1);  // 8M elements: over the cap
  EXPECT_TRUE(g->verify().ok());
  check_pass(b, fold_with_ref, "arith");
}

TEST(FoldConstants, WithoutEvaluatorOnlyShapesFold) {
  auto g = load(flatten_chain());
  ASSERT_TRUE(g);
  PassLog log;
  ASSERT_TRUE(fold_constants(*g, {}, log).ok());
  EXPECT_EQ(count_ops(*g, "Shape"), 0);
  EXPECT_EQ(count_ops(*g, "Gather"), 1);
  EXPECT_TRUE(g->verify().ok());
}

}  // namespace
}  // namespace nfuse::passes_test
