// Tests for the neural-network family's matmul, normalization, quantization and Einsum ops on
// the reference kernels: the rounding and saturation nfuse defines (kernels/quant_arithmetic.h),
// per-axis / per-row / per-channel parameters, numpy matmul broadcasting, legacy opset forms
// and hostile inputs the ONNX conformance cases leave out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace nfuse {
namespace {

using ir::DType;
using ir::Tensor;
using nn_test::attrs;
using nn_test::expect_tensor;
using nn_test::f32;
using nn_test::NodeRun;
using nn_test::scalar;
using std::vector;

template <typename T>
Tensor t(vector<T> v, vector<int64_t> dims) {
  return Tensor::from_vector(v, std::move(dims));
}

Tensor run_ok(const NodeRun& n) {
  auto y = n.run();
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  return y.ok() ? *y : Tensor();
}

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  Tensor x = f32({2.5f, 3.5f, -2.5f, -0.5f, 0.5f, 1000.0f, -1000.0f, 1.4999f}, {8});
  Tensor y = run_ok(NodeRun("QuantizeLinear", {x, scalar(1.0f), scalar<int8_t>(0)}));
  EXPECT_EQ(y.dtype(), DType::kI8);
  expect_tensor(y, {8}, {2, 4, -2, 0, 0, 127, -128, 1});
  Tensor u = run_ok(NodeRun("QuantizeLinear", {x, scalar(1.0f), scalar<uint8_t>(128)}));
  expect_tensor(u, {8}, {130, 132, 126, 128, 128, 255, 0, 129});
  // No zero point: u8 with zero point 0; x / scale = 2.5 rounds to 2.
  Tensor d = run_ok(NodeRun("QuantizeLinear", {f32({1.25f, -3.0f}, {2}), scalar(0.5f)}));
  EXPECT_EQ(d.dtype(), DType::kU8);
  expect_tensor(d, {2}, {2, 0});
}

TEST(QuantizeLinear, PerAxisAlongAnyAxis) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor rows = run_ok(NodeRun("QuantizeLinear", {x, f32({1, 2}, {2}), t<uint8_t>({0, 10}, {2})},
                               attrs({{"axis", int64_t{0}}})));
  expect_tensor(rows, {2, 3}, {1, 2, 3, 12, 12, 13});
  Tensor cols = run_ok(NodeRun("QuantizeLinear", {x, f32({1, 2, 4}, {3}), t<uint8_t>({0, 0, 0}, {3})},
                               attrs({{"axis", int64_t{-1}}})));
  expect_tensor(cols, {2, 3}, {1, 1, 1, 4, 2, 2});
  // Three scales cannot quantize an axis of two; an axis beyond the rank is rejected.
  EXPECT_FALSE(NodeRun("QuantizeLinear", {x, f32({1, 2, 4}, {3})}, attrs({{"axis", int64_t{0}}})).run().ok());
  EXPECT_FALSE(NodeRun("QuantizeLinear", {x, f32({1, 2}, {2})}, attrs({{"axis", int64_t{2}}})).run().ok());
  EXPECT_FALSE(NodeRun("QuantizeLinear", {x, scalar(1.0f), scalar<int32_t>(0)}).run().ok());  // i32 storage
}

TEST(DequantizeLinear, Int32AndPerAxisInt8) {
  expect_tensor(run_ok(NodeRun("DequantizeLinear", {t<int32_t>({100, -100}, {2}), scalar(0.5f)})), {2}, {50, -50});
  Tensor q = t<int8_t>({-128, 0, 127, -1}, {2, 2});
  Tensor y = run_ok(NodeRun("DequantizeLinear", {q, f32({0.5f, 2.0f}, {2}), t<int8_t>({0, -1}, {2})},
                            attrs({{"axis", int64_t{1}}})));
  EXPECT_EQ(y.dtype(), DType::kF32);
  expect_tensor(y, {2, 2}, {-64, 2, 63.5, 0});
  EXPECT_FALSE(NodeRun("DequantizeLinear", {q, scalar(1.0f), scalar<uint8_t>(0)}).run().ok());  // zp dtype
}

TEST(DynamicQuantizeLinear, AllZeroInputGivesZeroScale) {
  NodeRun n("DynamicQuantizeLinear", {f32({0, 0, 0}, {3})}, {}, 3);
  auto out = n.run_all();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_tensor((*out)[0], {3}, {0, 0, 0});
  expect_tensor((*out)[1], {}, {0});
  expect_tensor((*out)[2], {}, {0});
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  Tensor a = t<uint8_t>({10, 11, 20, 22}, {2, 2});
  Tensor b = t<uint8_t>({1, 2}, {2, 1});
  Tensor y = run_ok(NodeRun("MatMulInteger", {a, b, t<uint8_t>({10, 20}, {2}), scalar<uint8_t>(0)}));
  EXPECT_EQ(y.dtype(), DType::kI32);
  expect_tensor(y, {2, 1}, {2, 4});
  Tensor b2 = t<uint8_t>({1, 5, 2, 7}, {2, 2});
  expect_tensor(run_ok(NodeRun("MatMulInteger", {a, b2, scalar<uint8_t>(10), t<uint8_t>({1, 5}, {2})})), {2, 2},
                {1, 2, 12, 24});
}

TEST(QLinearMatMul, PerColumnScaleRequantizes) {
  Tensor a = t<uint8_t>({2, 4}, {1, 2});
  Tensor b = t<uint8_t>({1, 1, 1, 1}, {2, 2});
  Tensor y = run_ok(NodeRun("QLinearMatMul", {a, f32({1}, {1}), t<uint8_t>({0}, {1}), b, f32({1, 0.5f}, {2}),
                                              t<uint8_t>({0, 0}, {2}), f32({1}, {1}), t<uint8_t>({0}, {1})}));
  expect_tensor(y, {1, 2}, {6, 3});
}

TEST(QLinearConv, PerChannelWeightsBiasAndHalfEvenRounding) {
  Tensor x = t<uint8_t>({10}, {1, 1, 1, 1});
  Tensor w = t<uint8_t>({3, 5}, {2, 1, 1, 1});
  vector<Tensor> ins = {x, scalar(1.0f), scalar<uint8_t>(0), w, f32({1, 0.5f}, {2}), t<uint8_t>({0, 1}, {2}),
                        scalar(2.0f), scalar<uint8_t>(0)};
  expect_tensor(run_ok(NodeRun("QLinearConv", ins)), {1, 2, 1, 1}, {15, 10});
  ins.push_back(t<int32_t>({1, -1}, {2}));
  // (30 + 1) * 0.5 = 15.5 rounds to 16; (40 - 1) * 0.25 = 9.75 rounds to 10.
  expect_tensor(run_ok(NodeRun("QLinearConv", ins)), {1, 2, 1, 1}, {16, 10});
}

TEST(MatMul, OneDimensionalOperandsAndBatchBroadcast) {
  vector<float> seq(12);
  for (int i = 0; i < 12; ++i) seq[static_cast<size_t>(i)] = static_cast<float>(i);
  expect_tensor(run_ok(NodeRun("MatMul", {f32({1, 2, 3}, {3}), f32(seq, {2, 3, 2})})), {2, 2}, {16, 22, 52, 58});
  expect_tensor(run_ok(NodeRun("MatMul", {f32({0, 1, 2, 3, 4, 5}, {2, 3}), f32({1, 1, 1}, {3})})), {2}, {3, 12});
  expect_tensor(run_ok(NodeRun("MatMul", {f32({1, 2, 3}, {3}), f32({1, 1, 1}, {3})})), {}, {6});
  expect_tensor(run_ok(NodeRun("MatMul", {f32({1, 2, 3, 4}, {2, 1, 1, 2}), f32({1, 0, 0, 1, 1, 1}, {3, 2, 1})})),
                {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
  EXPECT_FALSE(NodeRun("MatMul", {f32(vector<float>(6), {2, 3}), f32(vector<float>(8), {4, 2})}).run().ok());
  EXPECT_FALSE(NodeRun("MatMul", {f32(vector<float>(4), {2, 2, 1}), f32(vector<float>(3), {3, 1, 1})}).run().ok());
}

TEST(MatMul, Int32WrapsLikeTheType) {
  Tensor y = run_ok(NodeRun("MatMul", {t<int32_t>({1 << 30, 1 << 30}, {1, 2}), t<int32_t>({2, 2}, {2, 1})}));
  EXPECT_EQ(y.dtype(), DType::kI32);
  expect_tensor(y, {1, 1}, {0});  // 2^32 mod 2^32
}

TEST(Gemm, TransposeAlphaBetaAndColumnBias) {
  Tensor y = run_ok(NodeRun("Gemm", {f32({1, 2, 3, 4}, {2, 2}), f32({1, 0, 0, 1}, {2, 2}), f32({10, 20}, {2, 1})},
                            attrs({{"transA", int64_t{1}}, {"alpha", 2.0f}, {"beta", 0.5f}})));
  expect_tensor(y, {2, 2}, {7, 11, 14, 18});
  EXPECT_FALSE(NodeRun("Gemm", {f32(vector<float>(4), {2, 2}), f32(vector<float>(4), {2, 2}), f32({1, 2, 3}, {3})})
                   .run()
                   .ok());
  EXPECT_FALSE(NodeRun("Gemm", {f32(vector<float>(4), {2, 2}), f32(vector<float>(4), {2, 2})},
                       attrs({{"transB", int64_t{2}}}))
                   .run()
                   .ok());
}

TEST(LayerNormalization, StatisticsOutputs) {
  NodeRun n("LayerNormalization", {f32({1, 2, 3, 4, 2, 2, 2, 2}, {2, 4}), f32({1, 1, 1, 1}, {4})}, {}, 3);
  auto out = n.run_all();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const double inv = 1.0 / std::sqrt(1.25 + 1e-5);
  expect_tensor((*out)[0], {2, 4}, {-1.5 * inv, -0.5 * inv, 0.5 * inv, 1.5 * inv, 0, 0, 0, 0}, 1e-5);
  expect_tensor((*out)[1], {2, 1}, {2.5, 2});
  expect_tensor((*out)[2], {2, 1}, {inv, 1.0 / std::sqrt(1e-5)}, 1e-3);
  EXPECT_FALSE(NodeRun("LayerNormalization", {f32({1, 2}, {2}), f32({1, 1}, {2})}, attrs({{"axis", int64_t{1}}}))
                   .run()
                   .ok());
}

TEST(BatchNormalization, LegacySpatialZeroAndTrainingOutputs) {
  // Opset 7, spatial = 0: parameters per channel and position (C x S = 4 values).
  Tensor x = f32({1, 1, 1, 1}, {1, 2, 2});
  Tensor ones = f32({1, 1, 1, 1}, {2, 2}), zeros = f32({0, 0, 0, 0}, {2, 2});
  NodeRun legacy("BatchNormalization", {x, f32({1, 2, 3, 4}, {2, 2}), zeros, zeros, ones},
                 attrs({{"spatial", int64_t{0}}, {"epsilon", 0.0f}}), 1, 7);
  expect_tensor(run_ok(legacy), {1, 2, 2}, {1, 2, 3, 4});
  // Opset 9 with the statistics outputs is training: reported as unsupported, not run wrongly.
  Tensor c = f32({1, 1}, {2});
  NodeRun training("BatchNormalization", {x, c, c, c, c}, {}, 5, 9);
  auto r = training.run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

TEST(LpNormalization, L1AndZeroRows) {
  expect_tensor(run_ok(NodeRun("LpNormalization", {f32({1, 3, 0, 0}, {2, 2})}, attrs({{"p", int64_t{1}}}))), {2, 2},
                {0.25, 0.75, 0, 0});
  EXPECT_FALSE(NodeRun("LpNormalization", {f32({1}, {1})}, attrs({{"p", int64_t{3}}})).run().ok());
}

TEST(Einsum, ImplicitOutputsEllipsisAndTrace) {
  auto run = [](const char* eq, vector<Tensor> ins) {
    return run_ok(NodeRun("Einsum", std::move(ins), attrs({{"equation", std::string(eq)}})));
  };
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  expect_tensor(run("ij,jk", {a, f32({5, 6, 7, 8}, {2, 2})}), {2, 2}, {19, 22, 43, 50});
  expect_tensor(run("ba", {f32({0, 1, 2, 3, 4, 5}, {2, 3})}), {3, 2}, {0, 3, 1, 4, 2, 5});
  expect_tensor(run("ii", {a}), {}, {5});
  expect_tensor(run("...ij,...jk->...ik", {f32({1, 2, 3, 4}, {2, 1, 2}), f32({1, 1}, {1, 2, 1})}), {2, 1, 1}, {3, 7});
  EXPECT_FALSE(NodeRun("Einsum", {a}, attrs({{"equation", std::string("ij,jk")}})).run().ok());
  EXPECT_FALSE(NodeRun("Einsum", {a}, attrs({{"equation", std::string("i$")}})).run().ok());
  EXPECT_FALSE(NodeRun("Einsum", {a}, attrs({{"equation", std::string("ijk")}})).run().ok());
  EXPECT_FALSE(NodeRun("Einsum", {a}, attrs({{"equation", std::string("ij->ik")}})).run().ok());
}

}  // namespace
}  // namespace nfuse
