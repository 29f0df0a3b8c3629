// The cpu backend's per-tensor QuantizeLinear / DequantizeLinear against the ref backend, bit for
// bit: u8 / s8 / s16, ties (x / scale = k + 0.5), saturation at both ends, infinities and NaN,
// odd lengths across the task split; and the node really runs on the cpu kernel.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu_typed_node.h"

namespace nfuse {
namespace {

ir::Tensor zero_point(ir::DType t, int64_t v) {
  switch (t) {
    case ir::DType::kU8: return ir::Tensor::from_vector<uint8_t>({static_cast<uint8_t>(v)}, {});
    case ir::DType::kI8: return ir::Tensor::from_vector<int8_t>({static_cast<int8_t>(v)}, {});
    default: return ir::Tensor::from_vector<int16_t>({static_cast<int16_t>(v)}, {});
  }
}

void expect_on_cpu_kernel(const cpu_test::TypedNode& n, const std::string& what) {
  runtime::SessionOptions options;
  options.backend = "cpu";
  auto s = runtime::Session::create(n.build(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  backends::RunProfile profile;
  auto r = (*s)->run({{"in0", n.inputs[0].tensor}}, &profile);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(profile.nodes.size(), 1u);
  EXPECT_FALSE(profile.nodes[0].reference) << what << " ran on the reference kernel";
}

TEST(CpuQuantizeLinear, MatchesRefBitForBit) {
  std::mt19937 rng(cpu_test::kSeed + 90);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  struct Case {
    ir::DType q;
    int64_t zp;
  };
  for (const Case c : {Case{ir::DType::kU8, 0}, Case{ir::DType::kU8, 131}, Case{ir::DType::kI8, 0},
                       Case{ir::DType::kI8, -7}, Case{ir::DType::kI16, 0}, Case{ir::DType::kI16, 300}}) {
    for (int64_t len : {1, 31, 70001}) {
      const float scale = c.q == ir::DType::kI16 ? 0.001f : 0.05f;
      const float range = c.q == ir::DType::kI16 ? 40.0f : 8.0f;  // beyond the type's range: saturation
      ir::Tensor x = cpu_test::random_tensor({len}, rng, -range, range);
      float* p = x.data<float>();
      const float specials[] = {kInf, -kInf, std::nanf(""), 0.5f * scale, 1.5f * scale, -2.5f * scale, -0.0f};
      for (int64_t i = 0; i < std::min<int64_t>(7, len); ++i) p[i] = specials[i];
      for (int64_t i = 7; i < std::min<int64_t>(64, len); ++i) p[i] = (static_cast<float>(i) - 30.5f) * scale;  // ties
      cpu_test::TypedNode quantize;
      quantize.op = "QuantizeLinear";
      quantize.opset = 21;
      quantize.inputs = {{x, false}, {ir::Tensor::from_vector<float>({scale}, {}), true}, {zero_point(c.q, c.zp), true}};
      const std::string what = "QuantizeLinear to " + std::string(ir::dtype_name(c.q)) + " zp " +
                               std::to_string(c.zp) + " len " + std::to_string(len);
      cpu_test::expect_typed_matches_ref(quantize, 0, what, 2);
      expect_on_cpu_kernel(quantize, what);

      auto qx = quantize.run("ref", 1);
      ASSERT_TRUE(qx.ok()) << qx.status().to_string();
      cpu_test::TypedNode dequantize;
      dequantize.op = "DequantizeLinear";
      dequantize.opset = 21;
      dequantize.inputs = {{(*qx)[0], false}, {ir::Tensor::from_vector<float>({scale}, {}), true},
                           {zero_point(c.q, c.zp), true}};
      cpu_test::expect_typed_matches_ref(dequantize, 0, "De" + what, 2);
      expect_on_cpu_kernel(dequantize, "De" + what);
    }
  }
}

}  // namespace
}  // namespace nfuse
