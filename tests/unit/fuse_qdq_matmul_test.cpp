#include "passes/fuse_qdq_matmul.h"
#include "backends/ref/interpreter.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;

struct Spec {
  bool a_signed = false;
  bool per_column = false;
  int64_t b_axis = 1;
  int64_t b_zp = 0;
  bool add_after = false;  // MatMul -> Add -> Q: not the pattern
  bool mm_output_used_twice = false;
};

constexpr int64_t kK = 24, kN = 16;
constexpr float kYScale = 0.03f;

// x (f32) [2, 5, K] -> Q -> DQ -> MatMul(DQ(b)) [-> Add] -> Q -> DQ -> z (f32)
OnnxBuilder build(const Spec& s) {
  OnnxBuilder b(17);
  const int qa = s.a_signed ? kI8 : kU8;
  b.input("x", kF, {2, 5, kK});
  b.initializer("a_scale", {}, {0.02f});
  int_initializer(b, "a_zp", qa, {}, {s.a_signed ? -4 : 131});
  b.node("QuantizeLinear", {"x", "a_scale", "a_zp"}, {"a_q"}, "qa");
  b.node("DequantizeLinear", {"a_q", "a_scale", "a_zp"}, {"a_dq"}, "dqa");
  std::vector<float> bs;
  const int64_t axis_len = s.b_axis == 1 ? kN : kK;
  for (int64_t j = 0; j < (s.per_column ? axis_len : 1); ++j) bs.push_back(0.01f + 0.001f * static_cast<float>(j % 5));
  const std::vector<int64_t> bsd = s.per_column ? std::vector<int64_t>{axis_len} : std::vector<int64_t>{};
  b.initializer("b_scale", bsd, bs);
  int_initializer(b, "b_zp", kI8, bsd, std::vector<int64_t>(bs.size(), s.b_zp));
  std::vector<int64_t> w;
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> d(-127, 127);
  for (int64_t i = 0; i < kK * kN; ++i) w.push_back(d(rng));
  int_initializer(b, "b_q", kI8, {kK, kN}, w);
  auto& dqb = b.node("DequantizeLinear", {"b_q", "b_scale", "b_zp"}, {"b_dq"}, "dqb");
  if (s.per_column) set_int_attr(dqb, "axis", s.b_axis);
  b.node("MatMul", {"a_dq", "b_dq"}, {"c"}, "mm");
  std::string y = "c";
  if (s.add_after) {
    random_initializer(b, "bias", {kN}, 3);
    b.node("Add", {"c", "bias"}, {"c2"}, "add");
    y = "c2";
  }
  b.initializer("y_scale", {}, {kYScale});
  int_initializer(b, "y_zp", s.a_signed ? kI8 : kU8, {}, {s.a_signed ? 2 : 127});
  b.node("QuantizeLinear", {y, "y_scale", "y_zp"}, {"y_q"}, "qy");
  b.node("DequantizeLinear", {"y_q", "y_scale", "y_zp"}, {"z"}, "dqy");
  out(b, "z");
  if (s.mm_output_used_twice) {
    b.node("Sigmoid", {"c"}, {"side"}, "side");
    out(b, "side");
  }
  return b;
}

void check(const Spec& s, bool expect_fused, const std::string& what) {
  SCOPED_TRACE(what);
  const OnnxBuilder b = build(s);
  auto before = load(b);
  auto after = load(b);
  ASSERT_TRUE(before && after);
  PassLog log;
  ASSERT_TRUE(fuse_qdq_matmul(*after, log).ok());
  Status v = after->verify();
  EXPECT_TRUE(v.ok()) << v.to_string();
  EXPECT_EQ(count_ops(*after, "QLinearMatMul"), expect_fused ? 1 : 0);
  EXPECT_EQ(count_ops(*after, "MatMul"), expect_fused ? 0 : 1);
  const std::vector<ir::Tensor> inputs = random_inputs(*before, kSeed);
  auto expected = backends::ref::interpret_graph(*before, inputs);
  auto got = backends::ref::interpret_graph(*after, inputs);
  ASSERT_TRUE(expected.ok() && got.ok());
  const ir::Tensor& e = (*expected)[0];
  const ir::Tensor& g = (*got)[0];
  int64_t differ = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double d = std::fabs(e.get_double(i) - g.get_double(i));
    ASSERT_LE(d, kYScale * 1.0001) << "flat index " << i;
    differ += d > 0;
  }
  EXPECT_LE(differ * 50, e.numel()) << differ << " of " << e.numel() << " outputs differ by one step";
  if (!expect_fused) return;
  // The fused graph on cpu (QLinearMatMul's int8 GEMM) equals ref bit for bit.
  runtime::NamedTensors named;
  for (size_t i = 0; i < inputs.size(); ++i) named.push_back({"x", inputs[i]});
  std::vector<ir::Tensor> outs[2];
  int i = 0;
  for (const char* backend : {"ref", "cpu"}) {
    runtime::SessionOptions so;
    so.backend = backend;
    so.threads = 2;
    auto sess = runtime::Session::create(load(b), so);
    ASSERT_TRUE(sess.ok()) << sess.status().to_string();
    auto r = (*sess)->run(named);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    outs[i++] = *r;
  }
  for (int64_t k = 0; k < outs[0][0].numel(); ++k) ASSERT_EQ(outs[0][0].get_double(k), outs[1][0].get_double(k)) << k;
}

TEST(FuseQdqMatMul, Fuses) {
  check({}, true, "u8, per-tensor");
  check({.a_signed = true, .per_column = true}, true, "s8, per-column");
}

TEST(FuseQdqMatMul, ConditionsNotMet) {
  check({.b_zp = 3}, false, "b_zp != 0");
  check({.per_column = true, .b_axis = 0}, false, "per-axis scale on axis 0 (K)");
  check({.add_after = true}, false, "MatMul -> Add -> Q");
  check({.mm_output_used_twice = true}, false, "MatMul output with a second consumer");
}

}  // namespace
}  // namespace nfuse::passes_test
