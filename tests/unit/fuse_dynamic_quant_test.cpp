// fuse_dynamic_quant: ONNX Runtime's dynamic-quantization pattern (DynamicQuantizeLinear ->
// MatMulInteger -> Cast -> Mul(Mul(x_scale, w_scale)) [-> Add bias]) becomes one
// nfuse.DynamicQuantMatMul with the same results, and the cpu backend runs it on the int8 GEMM
// with the same results as the reference interpreter on the unfused graph: u8 weights with
// per-column zero points, s8 weights with zero and non-zero zero points, with and without bias,
// either Mul operand order, a quantizer shared by two MatMuls, all-zero input (scale 0).
#include "passes/fuse_dynamic_quant.h"

#include "pass_test_util.h"
#include "support/context_round_trip.h"

namespace nfuse::passes_test {
namespace {

constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;
constexpr int64_t kK = 40, kN = 24;

struct Variant {
  int weight_type = kU8;
  bool per_column = true;
  bool zero_zp = false;
  bool bias = true;
  bool swapped_mul = false;
};

// One dynamically quantized Linear layer reading `x_q` (the DQL outputs named prefix_*), y = out.
void add_layer(OnnxBuilder& b, const std::string& p, const std::string& dql, const std::string& out, const Variant& v,
               uint32_t seed) {
  std::vector<int64_t> w(static_cast<size_t>(kK * kN));
  std::mt19937 rng(seed);
  const bool u8 = v.weight_type == kU8;
  std::uniform_int_distribution<int> dist(u8 ? 0 : -127, u8 ? 255 : 127);
  for (int64_t& x : w) x = dist(rng);
  int_initializer(b, p + "_w", v.weight_type, {kK, kN}, w);
  const int64_t channels = v.per_column ? kN : 1;
  std::vector<int64_t> zp(static_cast<size_t>(channels));
  for (int64_t& z : zp) z = v.zero_zp ? 0 : dist(rng) / 3;
  int_initializer(b, p + "_wzp", v.weight_type, v.per_column ? std::vector<int64_t>{kN} : std::vector<int64_t>{}, zp);
  b.initializer(p + "_ws", v.per_column ? std::vector<int64_t>{kN} : std::vector<int64_t>{},
                random_values(channels, seed + 1, 0.001f, 0.01f));
  b.node("MatMulInteger", {dql + "_q", p + "_w", dql + "_zp", p + "_wzp"}, {p + "_acc"}, p + "_mm");
  auto& cast = b.node("Cast", {p + "_acc"}, {p + "_accf"}, p + "_cast");
  set_int_attr(cast, "to", ::onnx::TensorProto::FLOAT);
  b.node("Mul", {dql + "_s", p + "_ws"}, {p + "_s"}, p + "_scales");
  const std::string scaled = v.bias ? p + "_scaled" : out;
  if (v.swapped_mul) {
    b.node("Mul", {p + "_s", p + "_accf"}, {scaled}, p + "_mul");
  } else {
    b.node("Mul", {p + "_accf", p + "_s"}, {scaled}, p + "_mul");
  }
  if (v.bias) {
    random_initializer(b, p + "_b", {kN}, seed + 2);
    b.node("Add", {scaled, p + "_b"}, {out}, p + "_add");
  }
}

OnnxBuilder one_layer(const Variant& v) {
  OnnxBuilder b;
  b.input("x", kF, {2, 3, kK});
  b.node("DynamicQuantizeLinear", {"x"}, {"dq_q", "dq_s", "dq_zp"}, "dq");
  add_layer(b, "fc", "dq", "y", v, 7);
  out(b, "y");
  return b;
}

TEST(FuseDynamicQuant, EveryWeightFormFusesWithTheSameResults) {
  const Variant variants[] = {
      {},                                                          // u8 per column, bias
      {.weight_type = kI8, .per_column = false, .zero_zp = true},  // s8 symmetric per tensor
      {.weight_type = kI8, .per_column = true, .zero_zp = false, .bias = false},
      {.weight_type = kU8, .per_column = false, .bias = false, .swapped_mul = true},
  };
  for (size_t i = 0; i < std::size(variants); ++i) {
    const std::string what = "variant " + std::to_string(i);
    std::unique_ptr<ir::Graph> after;
    const auto lines = check_pass(one_layer(variants[i]), fuse_dynamic_quant, what, &after);
    ASSERT_TRUE(after) << what;
    EXPECT_EQ(count_ops(*after, "DynamicQuantMatMul"), 1) << what;
    for (const char* gone : {"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Add"})
      EXPECT_EQ(count_ops(*after, gone), 0) << what << ": " << gone << " left";
    ASSERT_FALSE(lines.empty()) << what;

    const PipelineRun r = run_pipeline_against_ref(one_layer(variants[i]), "cpu", what);
    ASSERT_TRUE(r.session) << what;
    EXPECT_EQ(count_ops(r.session->graph(), "DynamicQuantMatMul"), 1) << what;
    EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
  }
}

TEST(FuseDynamicQuant, TheCpuKernelIsBitExactWithTheUnfusedGraph) {
  auto reference = load(one_layer({}));
  ASSERT_TRUE(reference);
  runtime::SessionOptions o;
  o.backend = "cpu";
  for (int threads : {1, 2}) {
    o.threads = threads;
    auto s = runtime::Session::create(load(one_layer({})), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    for (uint32_t seed : {1u, 2u, 3u}) {
      ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {2, 3, kK});
      const std::vector<float> v = random_values(x.numel(), seed, seed == 3 ? 0.0f : -3.0f, seed == 3 ? 0.0f : 5.0f);
      std::copy(v.begin(), v.end(), x.data<float>());  // seed 3: all zero, scale 0
      auto expected = backends::ref::interpret_graph(*reference, {x});
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      auto got = (*s)->run({{"x", x}});
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      for (int64_t i = 0; i < (*expected)[0].numel(); ++i) {
        ASSERT_EQ((*got)[0].data<float>()[i], (*expected)[0].data<float>()[i])
            << "threads " << threads << ", seed " << seed << ", element " << i;
      }
    }
  }
}

TEST(FuseDynamicQuant, AQuantizerSharedByTwoLayersFusesBoth) {
  OnnxBuilder b;
  b.input("x", kF, {4, kK});
  b.node("DynamicQuantizeLinear", {"x"}, {"dq_q", "dq_s", "dq_zp"}, "dq");
  add_layer(b, "q", "dq", "yq", {}, 11);
  add_layer(b, "k", "dq", "yk", {.weight_type = kI8, .zero_zp = true}, 12);
  out(b, "yq");
  out(b, "yk");
  std::unique_ptr<ir::Graph> after;
  check_pass(b, fuse_dynamic_quant, "shared quantizer", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(count_ops(*after, "DynamicQuantMatMul"), 2);
  EXPECT_EQ(count_ops(*after, "DynamicQuantizeLinear"), 0);
  run_pipeline_against_ref(b, "cpu", "shared quantizer");
}

TEST(FuseDynamicQuant, ANonConstantWeightStays) {
  OnnxBuilder b;
  b.input("x", kF, {4, kK}).input("wf", kF, {kK, kN});
  b.node("DynamicQuantizeLinear", {"x"}, {"dq_q", "dq_s", "dq_zp"}, "dq");
  b.node("DynamicQuantizeLinear", {"wf"}, {"w_q", "w_s", "w_zp"}, "dqw");
  b.node("MatMulInteger", {"dq_q", "w_q", "dq_zp", "w_zp"}, {"acc"}, "mm");
  set_int_attr(b.node("Cast", {"acc"}, {"accf"}, "cast"), "to", ::onnx::TensorProto::FLOAT);
  b.node("Mul", {"dq_s", "w_s"}, {"s"}, "scales");
  b.node("Mul", {"accf", "s"}, {"y"}, "mul");
  out(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  passes::PassLog log;
  ASSERT_TRUE(fuse_dynamic_quant(*g, log).ok());
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(count_ops(*g, "MatMulInteger"), 1);
}

// A context binary of the fused graph reads the packed panels and column sums from the file.
TEST(FuseDynamicQuant, ContextBinariesReadThePackedWeights) {
  for (int type : {kU8, kI8}) {
    Variant v;
    v.weight_type = type;
    std::unique_ptr<ir::Graph> g = load(one_layer(v));
    ASSERT_TRUE(g);
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {2, 3, kK});
    const std::vector<float> r = random_values(x.numel(), 9, -2.0f, 3.0f);
    std::copy(r.begin(), r.end(), x.data<float>());
    testing::expect_packed_round_trip({"dynmatmul" + std::to_string(type), std::move(g), {{"x", x}}}, "cpu",
                                      {"q8.dyn.colsum|", "q8.dynmatmul.gemm."});
  }
}

}  // namespace
}  // namespace nfuse::passes_test
