#include "passes/fuse_activation.h"

#include "ops/fused_epilogue.h"
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// Adds the producer under test: x [1,4,6,5] -> `op` -> "y".
void add_producer(OnnxBuilder& b, const std::string& op) {
  if (op == "Conv" || op == "ConvTranspose") {
    b.input("x", kF, {1, 4, 6, 5});
    random_initializer(b, "w", {4, 4, 3, 3}, 1);
    random_initializer(b, "bias", {4}, 2);
    auto& n = b.node(op, {"x", "w", "bias"}, {"y"}, "prod");
    set_ints_attr(n, "pads", {1, 1, 1, 1});
  } else if (op == "Gemm") {
    b.input("x", kF, {3, 6});
    random_initializer(b, "w", {6, 5}, 1);
    random_initializer(b, "bias", {5}, 2);
    b.node("Gemm", {"x", "w", "bias"}, {"y"}, "prod");
  } else {
    b.input("x", kF, {2, 3, 6});
    random_initializer(b, "w", {6, 5}, 1);
    b.node("MatMul", {"x", "w"}, {"y"}, "prod");
  }
}

// Adds an activation chain reading "y" and writing "z"; returns the fused activation name.
std::string add_activation(OnnxBuilder& b, const std::string& act) {
  if (act == "Relu" || act == "Sigmoid" || act == "HardSwish" || act == "Tanh") {
    b.node(act, {"y"}, {"z"}, "act");
  } else if (act == "Relu6") {
    b.initializer("lo", {}, {0.0f});
    b.initializer("hi", {}, {6.0f});
    b.node("Clip", {"y", "lo", "hi"}, {"z"}, "act");
    return "Clip";
  } else if (act == "ClipMinOnly") {
    b.initializer("lo", {}, {-0.25f});
    b.node("Clip", {"y", "lo"}, {"z"}, "act");
    return "Clip";
  } else if (act == "Gelu" || act == "GeluTanh") {  // nfuse.Gelu, as recognize_gelu mints it
    auto& n = b.node("Gelu", {"y"}, {"z"}, "act");
    n.set_domain("nfuse");
    if (act == "GeluTanh") {
      auto* a = n.add_attribute();
      a->set_name("approximate");
      a->set_type(::onnx::AttributeProto::STRING);
      a->set_s("tanh");
    }
  } else if (act == "LeakyRelu") {
    set_float_attr(b.node("LeakyRelu", {"y"}, {"z"}, "act"), "alpha", 0.3f);
  } else if (act == "HardSigmoid") {
    auto& n = b.node("HardSigmoid", {"y"}, {"z"}, "act");
    set_float_attr(n, "alpha", 0.25f);
    set_float_attr(n, "beta", 0.4f);
  } else if (act == "MulHardSigmoid") {  // x * HardSigmoid(x)
    b.node("HardSigmoid", {"y"}, {"h"}, "hs");
    b.node("Mul", {"h", "y"}, {"z"}, "mul");
    return "HardSwish";
  } else if (act == "SiLU") {  // x * Sigmoid(x)
    b.node("Sigmoid", {"y"}, {"h"}, "sig");
    b.node("Mul", {"y", "h"}, {"z"}, "mul");
  } else if (act == "AddClipDivMul" || act == "AddClipMulDiv" || act == "AddClipDiv") {
    b.initializer("three", {}, {3.0f});
    b.initializer("zero", {}, {0.0f});
    b.initializer("six", {}, {6.0f});
    b.node("Add", {"y", "three"}, {"a"}, "add3");
    b.node("Clip", {"a", "zero", "six"}, {"c"}, "clip");
    if (act == "AddClipDivMul") {
      b.node("Div", {"c", "six"}, {"d"}, "div6");
      b.node("Mul", {"y", "d"}, {"z"}, "mul");
    } else if (act == "AddClipMulDiv") {
      b.node("Mul", {"c", "y"}, {"m"}, "mul");
      b.node("Div", {"m", "six"}, {"z"}, "div6");
    } else {
      b.node("Div", {"c", "six"}, {"z"}, "div6");
      return "HardSigmoid";
    }
    return "HardSwish";
  }
  return act;
}

struct Case {
  std::string producer, activation;
};

class FuseActivation : public ::testing::TestWithParam<Case> {};

TEST_P(FuseActivation, FusesIntoProducer) {
  const Case& c = GetParam();
  OnnxBuilder b(14);
  add_producer(b, c.producer);
  const std::string fused = add_activation(b, c.activation);
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  const std::string what = c.producer + "+" + c.activation;
  auto lines = check_pass(b, fuse_activation, what, &after);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->nodes().size(), 1u) << what;
  const ir::Node& p = *after->nodes()[0];
  EXPECT_EQ(p.op_type, c.producer);
  EXPECT_EQ(p.output(0)->name, "z");
  EXPECT_EQ(p.attrs.get_string(ops::kFusedActivationAttr, ""), fused);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("into " + c.producer + " 'prod' as " + fused), std::string::npos) << lines[0];
  check_pass(b, fuse_activation, what);  // through a ref-backend Session as well
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* act :
       {"Relu", "Relu6", "ClipMinOnly", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "MulHardSigmoid", "SiLU",
        "Tanh", "AddClipDivMul", "AddClipMulDiv", "AddClipDiv", "Gelu", "GeluTanh"}) {
    cases.push_back({"Conv", act});
  }
  for (const char* p : {"ConvTranspose", "Gemm", "MatMul"}) {
    cases.push_back({p, "Relu"});
    cases.push_back({p, "AddClipDivMul"});
    cases.push_back({p, "Gelu"});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, FuseActivation, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.producer + "_" + info.param.activation;
                         });

// GELU fused into each producer runs in the cpu kernels' epilogue (the f32-vmath GELU on the
// rows just written), against the reference interpreter on the unfused graph.
TEST(FuseActivationGelu, RunsFusedOnTheCpuKernels) {
  for (const char* producer : {"Conv", "ConvTranspose", "Gemm", "MatMul"}) {
    for (const char* act : {"Gelu", "GeluTanh"}) {
      OnnxBuilder b(14);
      add_producer(b, producer);
      add_activation(b, act);
      out(b, "z");
      const std::string what = std::string(producer) + "+" + act;
      const PipelineRun r = run_pipeline_against_ref(b, "cpu", what);
      ASSERT_TRUE(r.session) << what;
      EXPECT_EQ(count_ops(r.session->graph(), "Gelu"), 0) << what << ": not fused";
      EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
    }
  }
}

TEST(FuseActivationBlocked, ClipAttributesBeforeOpset11) {
  OnnxBuilder b(10);
  add_producer(b, "Conv");
  auto& clip = b.node("Clip", {"y"}, {"z"}, "act");
  set_float_attr(clip, "min", 0.0f);
  set_float_attr(clip, "max", 6.0f);
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  check_pass(b, fuse_activation, "clip_attrs", &after);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->nodes().size(), 1u);
  EXPECT_EQ(after->nodes()[0]->attrs.get_floats(ops::kFusedActivationParamsAttr), (std::vector<float>{0.0f, 6.0f}));
}

TEST(FuseActivationBlocked, MultipleConsumersOrGraphOutput) {
  {
    OnnxBuilder b;
    add_producer(b, "Conv");
    b.node("Relu", {"y"}, {"z"}, "act");
    b.node("Sigmoid", {"y"}, {"s"}, "other");
    out(b, "z");
    out(b, "s");
    auto lines = check_pass(b, fuse_activation, "two_consumers");
    EXPECT_TRUE(lines.empty());
  }
  {
    OnnxBuilder b;
    add_producer(b, "Conv");
    b.node("Relu", {"y"}, {"z"}, "act");
    out(b, "z");
    out(b, "y");
    auto lines = check_pass(b, fuse_activation, "graph_output");
    EXPECT_TRUE(lines.empty());
  }
  {  // x * HardSigmoid(x) where x also feeds a third node
    OnnxBuilder b;
    add_producer(b, "Conv");
    b.node("HardSigmoid", {"y"}, {"h"}, "hs");
    b.node("Mul", {"h", "y"}, {"z"}, "mul");
    b.node("Relu", {"y"}, {"r"}, "other");
    out(b, "z");
    out(b, "r");
    std::unique_ptr<ir::Graph> after;
    auto lines = check_pass(b, fuse_activation, "hardswish_third_consumer", &after);
    ASSERT_TRUE(after);
    EXPECT_TRUE(lines.empty());
  }
  {  // a non-constant Clip bound
    OnnxBuilder b;
    add_producer(b, "Conv");
    b.input("hi", kF, {});
    b.node("Clip", {"y", "", "hi"}, {"z"}, "act");
    out(b, "z");
    auto lines = check_pass(b, fuse_activation, "dynamic_clip");
    EXPECT_TRUE(lines.empty());
  }
}

}  // namespace
}  // namespace nfuse::passes_test
