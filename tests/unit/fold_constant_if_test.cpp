// fold_constant_if: an If with a constant condition becomes the nodes of its taken branch; the
// results stay the same. A condition computed from static shapes (an exporter's shape check)
// folds through fold_constants first, so the whole network leaves the If and runs on cpu kernels.
#include "passes/fold_constant_if.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr int kBool = ::onnx::TensorProto::BOOL;
constexpr int kI64 = ::onnx::TensorProto::INT64;

// then: relu(conv(x, w)) + w_bias; else: x * 2. Both read outer values.
void add_branches(::onnx::NodeProto& iff) {
  for (bool then_branch : {true, false}) {
    ::onnx::GraphProto g;
    g.set_name(then_branch ? "then" : "else");
    auto add = [&g](const char* op, std::vector<std::string> in, const std::string& out) {
      auto* n = g.add_node();
      n->set_op_type(op);
      n->set_name(std::string(op) + "_" + out);
      for (const std::string& i : in) n->add_input(i);
      n->add_output(out);
      return n;
    };
    if (then_branch) {
      set_ints_attr(*add("Conv", {"x", "w"}, "c"), "pads", {1, 1, 1, 1});
      add("Relu", {"c"}, "r");
      add("Add", {"r", "bias"}, "then_out");
    } else {
      add("Mul", {"x", "two"}, "else_out");
    }
    auto* out = g.add_output();
    out->set_name(then_branch ? "then_out" : "else_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(kF);
    auto* a = iff.add_attribute();
    a->set_name(then_branch ? "then_branch" : "else_branch");
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
  }
}

void add_bool_initializer(OnnxBuilder& b, const std::string& name, bool v) {
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(kBool);
  t->add_int32_data(v ? 1 : 0);
}

// batch -1: symbolic, so only a plan's input dims decide a shape check.
OnnxBuilder wrapped(bool constant_cond, bool value, int64_t batch = 1) {
  OnnxBuilder b;
  b.input("x", kF, {batch, 4, 8, 8});
  random_initializer(b, "w", {4, 4, 3, 3}, 11);
  random_initializer(b, "bias", {1, 4, 1, 1}, 12);
  b.initializer("two", {}, {2.0f});
  if (constant_cond) {
    add_bool_initializer(b, "cond", value);
  } else {
    // cond = Shape(x)[0] == 1: static shapes decide it.
    b.node("Shape", {"x"}, {"shape"}, "shape");
    auto* idx = b.model().mutable_graph()->add_initializer();
    idx->set_name("zero");
    idx->set_data_type(kI64);
    idx->add_int64_data(0);
    auto* one = b.model().mutable_graph()->add_initializer();
    one->set_name("one");
    one->set_data_type(kI64);
    one->add_int64_data(1);
    b.node("Gather", {"shape", "zero"}, {"batch"}, "batch");
    b.node("Equal", {"batch", "one"}, {"cond"}, "is_single");
  }
  add_branches(b.node("If", {"cond"}, {"y"}, "wrapper"));
  out(b, "y");
  return b;
}

TEST(FoldConstantIf, EitherConstantBranchIsInlinedWithTheSameResults) {
  for (bool value : {true, false}) {
    std::unique_ptr<ir::Graph> after;
    const auto lines = check_pass(wrapped(true, value), fold_constant_if, value ? "then" : "else", &after);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find(value ? "inlined its then branch (3 nodes)" : "inlined its else branch (1 nodes)"),
              std::string::npos)
        << lines[0];
    ASSERT_TRUE(after);
    EXPECT_EQ(count_ops(*after, "If"), 0);
    EXPECT_EQ(count_ops(*after, value ? "Conv" : "Mul"), 1);
  }
}

TEST(FoldConstantIf, AnInputConditionStays) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4, 8, 8}).input("cond", kBool, {});
  random_initializer(b, "w", {4, 4, 3, 3}, 11);
  random_initializer(b, "bias", {1, 4, 1, 1}, 12);
  b.initializer("two", {}, {2.0f});
  add_branches(b.node("If", {"cond"}, {"y"}, "wrapper"));
  out(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  passes::PassLog log;
  ASSERT_TRUE(fold_constant_if(*g, log).ok());
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(count_ops(*g, "If"), 1);
}

TEST(FoldConstantIf, AShapeCheckFoldsAndTheNetworkRunsOnCpuKernels) {
  const PipelineRun r = run_pipeline_against_ref(wrapped(false, true), "cpu", "shape-checked wrapper");
  ASSERT_TRUE(r.session);
  EXPECT_EQ(r.session->pass_report().num_changes("fold_constant_if"), 1u);
  EXPECT_EQ(count_ops(r.session->graph(), "If"), 0);
  EXPECT_TRUE(r.reference_nodes.empty()) << r.reference_nodes.front();
}

// The same check on a symbolic batch: Session::create cannot fold it, each plan can. The plan
// for batch 1 runs the then branch's nodes, the plan for batch 3 the else branch's, neither an If,
// and both agree with the reference interpreter on the unoptimized graph.
TEST(FoldConstantIf, AShapeCheckOnASymbolicDimFoldsInEachPlan) {
  auto reference = load(wrapped(false, true, -1));
  ASSERT_TRUE(reference);
  runtime::SessionOptions o;
  o.backend = "cpu";
  auto s = runtime::Session::create(load(wrapped(false, true, -1)), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(count_ops((*s)->graph(), "If"), 1) << "folded before the dims were known";
  for (int64_t batch : {1, 3, 1}) {
    const std::string what = "batch " + std::to_string(batch);
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {batch, 4, 8, 8});
    const std::vector<float> r = random_values(x.numel(), static_cast<uint32_t>(batch), -2.0f, 2.0f);
    std::copy(r.begin(), r.end(), x.data<float>());
    auto plan = (*s)->prepare({{"x", x.dims()}});
    ASSERT_TRUE(plan.ok()) << what << ": " << plan.status().to_string();
    ASSERT_TRUE((*plan)->specialized_graph) << what;
    const ir::Graph& g = (*s)->planned_graph(**plan);
    EXPECT_EQ(count_ops(g, "If"), 0) << what;
    EXPECT_EQ(count_ops(g, batch == 1 ? "Conv" : "Mul"), 1) << what;
    bool folded = false;
    for (const std::string& line : (*plan)->specialization_changes)
      folded = folded || line.find("fold_constant_if") != std::string::npos;
    EXPECT_TRUE(folded) << what;
    auto expected = backends::ref::interpret_graph(*reference, {x});
    ASSERT_TRUE(expected.ok()) << what << ": " << expected.status().to_string();
    auto got = (*s)->run({{"x", x}});
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
    expect_close(*expected, *got, what);
  }
  EXPECT_EQ((*s)->cached_plans(), 2u);
}

}  // namespace
}  // namespace nfuse::passes_test
