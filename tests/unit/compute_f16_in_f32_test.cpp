// compute_f16_in_f32: an FP16 network (as `.half()` exports it: f16 inputs, weights and outputs)
// and one with FP16 Casts at its edges run in f32 on the cpu backend's optimized kernels, within
// f16 rounding of the strict f16 evaluation of the file on the ref interpreter.
#include "passes/compute_f16_in_f32.h"

#include "compile/plan_stats.h"
#include "pass_test_util.h"
#include "passes/eliminate_dead_code.h"

namespace nfuse::passes_test {
namespace {

constexpr int kF16 = ::onnx::TensorProto::FLOAT16;

void half_initializer(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(kF16);
  for (int64_t d : dims) t->add_dims(d);
  std::string raw;
  for (float v : random_values(numel(dims), seed, -0.5f, 0.5f)) {
    const uint16_t h = ir::float_to_half(v);
    raw.append(reinterpret_cast<const char*>(&h), 2);
  }
  t->set_raw_data(raw);
}

// conv 3x3 (f16 weights, bias) -> relu -> maxpool -> conv 1x1 -> add(skip) -> sigmoid; the
// input `x` and output `y` of `io` type (f16: a `.half()` export; f32: Casts at the edges).
OnnxBuilder half_cnn(int io) {
  OnnxBuilder b;
  b.input("x", io, {1, 8, 16, 16});
  half_initializer(b, "w1", {16, 8, 3, 3}, 1);
  half_initializer(b, "b1", {16}, 2);
  half_initializer(b, "w2", {16, 16, 1, 1}, 3);
  std::string x = "x";
  if (io != kF16) {
    testing::set_int_attr(b.node("Cast", {"x"}, {"xh"}, "in_cast"), "to", kF16);
    x = "xh";
  }
  set_ints_attr(b.node("Conv", {x, "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu");
  auto& pool = b.node("MaxPool", {"r1"}, {"p"}, "pool");
  set_ints_attr(pool, "kernel_shape", {2, 2});
  set_ints_attr(pool, "strides", {2, 2});
  b.node("Conv", {"p", "w2"}, {"c2"}, "conv2");
  b.node("Add", {"c2", "p"}, {"s"}, "skip");
  b.node("Sigmoid", {"s"}, {io == kF16 ? "y" : "yh"}, "sig");
  if (io != kF16) testing::set_int_attr(b.node("Cast", {"yh"}, {"y"}, "out_cast"), "to", io);
  auto* vi = b.model().mutable_graph()->add_output();
  vi->set_name("y");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(io);
  return b;
}

ir::Tensor input_of(ir::DType dtype) {
  const std::vector<float> v = random_values(8 * 16 * 16, 7, -2.0f, 2.0f);
  ir::Tensor t = ir::Tensor::allocate(dtype, {1, 8, 16, 16});
  for (size_t i = 0; i < v.size(); ++i) ir::store_from_double(dtype, t.raw(), static_cast<int64_t>(i), v[i]);
  return t;
}

// The pass on a fresh import of `b`; the log, and the graph in `*after` (verified).
std::vector<std::string> run_pass(const OnnxBuilder& b, std::unique_ptr<ir::Graph>* after) {
  *after = load(b);
  if (!*after) return {};
  passes::PassLog log;
  const Status s = compute_f16_in_f32(**after, log);
  EXPECT_TRUE(s.ok()) << s.to_string();
  const Status v = (*after)->verify();
  EXPECT_TRUE(v.ok()) << v.to_string();
  return log.lines();
}

void check(int io, const char* what) {
  const OnnxBuilder b = half_cnn(io);
  auto strict = load(b);
  ASSERT_TRUE(strict);
  const ir::Tensor x = input_of(io == kF16 ? ir::DType::kF16 : ir::DType::kF32);
  auto expected = backends::ref::interpret_graph(*strict, {x});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();

  std::unique_ptr<ir::Graph> after;
  const auto lines = run_pass(b, &after);
  ASSERT_EQ(lines.size(), 1u) << what;
  EXPECT_NE(lines[0].find("6 float16/bfloat16 nodes compute in f32 (3 constants converted"), std::string::npos)
      << lines[0];
  // Only the graph's own edges stay 16-bit: no Cast between the f32 nodes (once what nothing
  // reads is gone); with f32 edges, none at all.
  passes::PassLog dce;
  ASSERT_TRUE(eliminate_dead_code(*after, {}, dce).ok());
  EXPECT_EQ(count_ops(*after, "Cast"), io == kF16 ? 2 : 0) << what;

  runtime::SessionOptions o;
  o.backend = "cpu";
  auto session = runtime::Session::create(load(b), o);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  auto plan = (*session)->prepare({{"x", x.dims()}});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const compile::PlanStats stats = compile::compute_stats((*session)->graph(), **plan);
  for (const std::string& label : stats.reference_nodes) {
    EXPECT_NE(label.find("Cast"), std::string::npos) << what << ": " << label << " on a reference kernel";
  }
  auto got = (*session)->run({{"x", x}});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ((*got)[0].dtype(), (*expected)[0].dtype());
  ASSERT_EQ((*got)[0].dims(), (*expected)[0].dims());
  // Sigmoid outputs in (0, 1): f16 keeps ~3 decimal digits, and the strict evaluation rounds
  // every intermediate to f16 where the f32 one does not.
  for (int64_t i = 0; i < (*got)[0].numel(); ++i) {
    ASSERT_NEAR((*got)[0].get_double(i), (*expected)[0].get_double(i), 4e-3) << what << " at " << i;
  }
}

TEST(ComputeF16InF32, HalfExportRunsInF32OnOptimizedKernels) { check(kF16, "f16 in and out"); }

TEST(ComputeF16InF32, CastsAtTheEdgesDisappear) { check(kF, "f32 in and out, Casts to f16 inside"); }

TEST(ComputeF16InF32, F32GraphsAreUntouched) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4});
  b.node("Relu", {"x"}, {"y"}, "relu");
  out(b, "y");
  std::unique_ptr<ir::Graph> after;
  EXPECT_TRUE(run_pass(b, &after).empty());
}

}  // namespace
}  // namespace nfuse::passes_test
