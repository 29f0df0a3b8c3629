// Exp, Log, Sqrt and Erf on the cpu backend: placed on the f32-vmath kernels (not the reference
// ones) and within the pass tolerance of the reference interpreter on the graph as imported,
// with 1 and 2 threads over an input large enough to split into several tasks; Cast f32 -> f16
// -> f32 on the f16-vcvt kernels, bit-exact with the reference.
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

OnnxBuilder math_model(int64_t n) {
  OnnxBuilder b(13);
  b.input("x", kF, {3, n});
  b.node("Exp", {"x"}, {"e"}, "exp");
  b.node("Log", {"e"}, {"l"}, "log");  // log(exp(x)): positive inputs, no NaN to compare
  b.node("Sqrt", {"e"}, {"s"}, "sqrt");
  b.node("Erf", {"x"}, {"r"}, "erf");
  for (const char* o : {"e", "l", "s", "r"}) out(b, o);
  return b;
}

TEST(CpuMath, EachOpRunsOnTheVectorKernel) {
  for (int64_t n : {1, 17, 40000}) {
    const std::string what = "n=" + std::to_string(n);
    const PipelineRun r = run_pipeline_against_ref(math_model(n), "cpu", what);
    ASSERT_TRUE(r.session) << what;
    EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
  }
}

TEST(CpuMath, TwoThreadsAgreeWithOne) {
  auto g = load(math_model(40000));
  ASSERT_TRUE(g);
  const std::vector<ir::Tensor> inputs = random_inputs(*g, kSeed);
  std::vector<std::vector<ir::Tensor>> results;
  for (int threads : {1, 2}) {
    runtime::SessionOptions o;
    o.backend = "cpu";
    o.threads = threads;
    auto s = runtime::Session::create(load(math_model(40000)), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto got = (*s)->run({{"x", inputs[0]}});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    results.push_back(std::move(*got));
  }
  for (size_t o = 0; o < results[0].size(); ++o)
    for (int64_t i = 0; i < results[0][o].numel(); ++i)
      ASSERT_EQ(results[0][o].data<float>()[i], results[1][o].data<float>()[i]) << "output " << o << ", " << i;
}

TEST(CpuMath, HalfCastsRunOnTheCpuKernelBitExactly) {
  for (int64_t n : {1, 13, 70001}) {
    OnnxBuilder b(13);
    b.input("x", kF, {n});
    set_int_attr(b.node("Cast", {"x"}, {"h"}, "to_half"), "to", ::onnx::TensorProto::FLOAT16);
    set_int_attr(b.node("Cast", {"h"}, {"y"}, "to_float"), "to", kF);
    out(b, "y");
    const std::string what = "n=" + std::to_string(n);
    const PipelineRun r = run_pipeline_against_ref(b, "cpu", what);
    ASSERT_TRUE(r.session) << what;
    EXPECT_EQ(count_ops(r.session->graph(), "Cast"), 2) << what;
    EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
    auto g = load(b);
    ASSERT_TRUE(g);
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {n});
    const std::vector<float> v = random_values(n, 9, -70000.0f, 70000.0f);  // beyond half's range too
    std::copy(v.begin(), v.end(), x.data<float>());
    auto expected = backends::ref::interpret_graph(*g, {x});
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    auto got = r.session->run({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ((*got)[0].data<float>()[i], (*expected)[0].data<float>()[i]) << i;
  }
}

}  // namespace
}  // namespace nfuse::passes_test
