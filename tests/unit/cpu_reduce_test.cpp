// Reduce* on the cpu backend: every reduction over the axis sets real models use (the last axis,
// spatial axes, the channel axis, all axes, a run with size-1 axes inside, keepdims 0) placed on
// the cpu kernel and within the pass tolerance of the reference interpreter; axes that do not
// form one run (0 and 2 of a 3-D input) still agree, on the reference kernel; one session run at
// two input shapes in turn (its view is cached per shape) agrees with the reference each time.
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr const char* kOps[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2"};

// x [2, 5, 1, 37, 9] -> op over `axes` (opset 13: axes an attribute, ReduceSum's an input).
OnnxBuilder reduce_model(const std::string& op, const std::vector<int64_t>& axes, bool keepdims) {
  OnnxBuilder b(13);
  b.input("x", kF, {2, 5, 1, 37, 9});
  ::onnx::NodeProto* node;
  if (op == "ReduceSum") {
    int_initializer(b, "axes", ::onnx::TensorProto::INT64, {static_cast<int64_t>(axes.size())}, axes);
    node = &b.node(op, {"x", "axes"}, {"y"}, "reduce");
  } else {
    node = &b.node(op, {"x"}, {"y"}, "reduce");
    set_ints_attr(*node, "axes", axes);
  }
  if (!keepdims) set_int_attr(*node, "keepdims", 0);
  out(b, "y");
  return b;
}

TEST(CpuReduce, EveryContiguousAxisSetRunsOnTheCpuKernel) {
  const std::vector<std::vector<int64_t>> axis_sets = {{4}, {3, 4}, {-1, -2}, {1}, {0}, {1, 2, 3}, {0, 1, 2, 3, 4}};
  for (const char* op : kOps) {
    for (const auto& axes : axis_sets) {
      for (bool keepdims : {true, false}) {
        std::string what = std::string(op) + " axes";
        for (int64_t a : axes) what += " " + std::to_string(a);
        what += keepdims ? " keepdims" : "";
        const PipelineRun r = run_pipeline_against_ref(reduce_model(op, axes, keepdims), "cpu", what);
        ASSERT_TRUE(r.session) << what;
        EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
      }
    }
  }
}

TEST(CpuReduce, SplitAxesStillAgreeWithTheReference) {
  for (const char* op : kOps) run_pipeline_against_ref(reduce_model(op, {1, 3}, true), "cpu", op);
}

TEST(CpuReduce, ASessionRunAtChangingShapesAgreesEachTime) {
  OnnxBuilder b(13);
  b.input("x", kF, {-1, 6, 5});  // symbolic batch
  set_ints_attr(b.node("ReduceMean", {"x"}, {"y"}, "reduce"), "axes", {0, 1});
  out(b, "y");
  auto reference = load(b);
  ASSERT_TRUE(reference);
  runtime::SessionOptions o;
  o.backend = "cpu";
  auto s = runtime::Session::create(load(b), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  for (int64_t batch : {3, 1, 7, 3}) {
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {batch, 6, 5});
    const std::vector<float> v = random_values(x.numel(), static_cast<uint32_t>(batch));
    std::copy(v.begin(), v.end(), x.data<float>());
    auto expected = backends::ref::interpret_graph(*reference, {x});
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    auto got = (*s)->run({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_close(*expected, *got, "batch " + std::to_string(batch));
  }
}

}  // namespace
}  // namespace nfuse::passes_test
