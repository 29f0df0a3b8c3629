// ONNX Runtime QOperator models (com.microsoft QLinearAdd, QLinearMul, QLinearConcat,
// QLinearGlobalAveragePool) import and run: a chain of them with optional zero points omitted,
// checked on ref against values worked out by hand from the definitions in kernels/quant_arithmetic.h, and
// on cpu against ref bit for bit.
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr int kU8 = ::onnx::TensorProto::UINT8;

::onnx::NodeProto& ms_node(OnnxBuilder& b, const std::string& op, std::vector<std::string> in,
                           std::vector<std::string> outs) {
  auto& n = b.node(op, std::move(in), std::move(outs), op);
  n.set_domain("com.microsoft");
  return n;
}

TEST(QLinearMsImport, OrtQOperatorChain) {
  OnnxBuilder b(13);
  auto* ms = b.model().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  b.input("a", kU8, {1, 2, 1, 2});
  b.input("c", kU8, {1, 1, 1, 2});
  b.initializer("s1", {}, {1.0f});
  b.initializer("s2", {}, {0.5f});
  int_initializer(b, "z10", kU8, {}, {10});
  // y = QLinearAdd(a (s 1, zp 10), a (s 1, zp omitted = 0), out s 2 zp omitted):
  //   round((a - 10) * 0.5 + a * 0.5) -> a - 5
  ms_node(b, "QLinearAdd", {"a", "s1", "z10", "a", "s1", "", "s2x", ""}, {"y"});
  b.initializer("s2x", {}, {2.0f});
  // m = QLinearMul(y (s 1), c (s 0.5, zp 10), out s 1): round((y) * (c - 10) * 0.5)
  ms_node(b, "QLinearMul", {"y", "s1", "", "c", "s2", "z10", "s1", ""}, {"m"});
  // k = QLinearConcat(out s 1 zp 0; m (s 1, zp 0), c (s 0.5, zp 10)) on axis 1 -> [1, 3, 1, 2]
  int_initializer(b, "z0", kU8, {}, {0});
  auto& cat = ms_node(b, "QLinearConcat", {"s1", "z0", "m", "s1", "z0", "c", "s2", "z10"}, {"k"});
  ::nfuse::testing::set_int_attr(cat, "axis", 1);
  // g = QLinearGlobalAveragePool(k (s 1, zp 0) -> s 1 zp 0): mean over the two values per channel
  ms_node(b, "QLinearGlobalAveragePool", {"k", "s1", "z0", "s1", "z0"}, {"g"});
  b.output("g", kU8, {1, 3, 1, 1});
  auto g = load(b);
  ASSERT_TRUE(g);
  ir::Tensor a = ir::Tensor::from_vector<uint8_t>({20, 200, 7, 255}, {1, 2, 1, 2});
  ir::Tensor c = ir::Tensor::from_vector<uint8_t>({14, 30}, {1, 1, 1, 2});
  // y = a - 5 = {15, 195, 2, 250}; m = round(y * (c - 10) * 0.5) = {round(15*2), round(195*10), round(2*2),
  // round(250*10)} saturated = {30, 255, 4, 255}; k = [m (2 channels), c requantized: (c - 10) * 0.5 / 1
  // = {2, 10}]; g = per channel mean: {(30+255)/2 = 142.5 -> 142, (4+255)/2 = 129.5 -> 130, 6}.
  const std::vector<int64_t> expected = {142, 130, 6};
  ir::Tensor results[2];
  int k = 0;
  for (const char* backend : {"ref", "cpu"}) {
    runtime::SessionOptions so;
    so.backend = backend;
    auto s = runtime::Session::create(load(b), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto out = (*s)->run({{"a", a}, {"c", c}});
    ASSERT_TRUE(out.ok()) << backend << ": " << out.status().to_string();
    results[k++] = (*out)[0];
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(results[0].get_int(i), expected[static_cast<size_t>(i)]) << "ref, channel " << i;
    EXPECT_EQ(results[1].get_int(i), results[0].get_int(i)) << "cpu vs ref, channel " << i;
  }
}

}  // namespace
}  // namespace nfuse::passes_test
