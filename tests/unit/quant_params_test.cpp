// Quantization parameters from ranges, per-channel weights and int32 biases.
#include "quant/quant_params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/quant_arithmetic.h"
#include "quant/quant_math.h"

namespace nfuse::quant {
namespace {

using ir::DType;
using ir::Tensor;

// The one quantization arithmetic (kernels/quant_arithmetic.h) against the spec restated here:
// x / scale in f32, rounded half to even, plus the zero point, saturated; back: f32(q - zp) * s.
TEST(QuantParams, ArithmeticFollowsTheSpec) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> x(-300.0f, 300.0f), s(0.001f, 3.0f);
  std::uniform_int_distribution<int> zp(0, 255);
  auto spec = [](float v, float sc, int64_t z, double lo, double hi) {
    const float scaled = v / sc;
    return std::min(hi, std::max(lo, static_cast<double>(std::nearbyint(scaled)) + static_cast<double>(z)));
  };
  for (int i = 0; i < 20000; ++i) {
    float v = i % 50 == 0 ? std::nearbyint(x(rng)) + 0.5f : x(rng);  // ties too
    float sc = i % 50 == 0 ? 1.0f : s(rng);
    int64_t z = zp(rng);
    ASSERT_EQ(quantize_value<uint8_t>(v, sc, z), static_cast<uint8_t>(spec(v, sc, z, 0, 255))) << v << " " << sc;
    ASSERT_EQ(quantize_value<int8_t>(v, sc, 0), static_cast<int8_t>(spec(v, sc, 0, -128, 127)));
    ASSERT_EQ(dequantize_value(z, sc, 3), static_cast<float>(z - 3) * sc);
  }
  EXPECT_EQ(quantize_value<int8_t>(2.5f, 1.0f, 0), 2);  // ties to even
  EXPECT_EQ(quantize_value<int8_t>(-3.5f, 1.0f, 0), -4);
  EXPECT_EQ(quantize_value<uint8_t>(std::numeric_limits<float>::quiet_NaN(), 1.0f, 7), 7);
}

TEST(QuantParams, U8AsymmetricKnownValues) {
  Result<ir::QuantParams> p = activation_params(Range{-1.0f, 3.0f}, ActScheme::kU8Asymmetric);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->storage, DType::kU8);
  EXPECT_EQ(p->axis, -1);
  EXPECT_FLOAT_EQ(p->scale[0], 4.0f / 255.0f);
  EXPECT_EQ(p->zero_point[0], 64);  // round(63.75)
  // positive-only ranges are widened down to 0, negative-only up to 0
  Result<ir::QuantParams> pos = activation_params(Range{2.0f, 5.0f}, ActScheme::kU8Asymmetric);
  EXPECT_EQ(pos->zero_point[0], 0);
  EXPECT_FLOAT_EQ(pos->scale[0], 5.0f / 255.0f);
  Result<ir::QuantParams> neg = activation_params(Range{-5.0f, -2.0f}, ActScheme::kU8Asymmetric);
  EXPECT_EQ(neg->zero_point[0], 255);
  EXPECT_FLOAT_EQ(neg->scale[0], 5.0f / 255.0f);
}

TEST(QuantParams, U8ZeroIsExactForRandomRanges) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-50.0f, 50.0f);
  for (int i = 0; i < 5000; ++i) {
    float a = d(rng), b = d(rng);
    Range r{std::min(a, b), std::max(a, b)};
    Result<ir::QuantParams> p = activation_params(r, ActScheme::kU8Asymmetric);
    ASSERT_TRUE(p.ok());
    const float s = p->scale[0];
    const int64_t zp = p->zero_point[0];
    ASSERT_GE(zp, 0);
    ASSERT_LE(zp, 255);
    ASSERT_GT(s, 0.0f);
    ASSERT_EQ(fake_quantize<uint8_t>(0.0f, s, zp), 0.0f);
    // the range ends stay representable to within one step
    const float lo = std::min(r.min, 0.0f), hi = std::max(r.max, 0.0f);
    ASSERT_NEAR(fake_quantize<uint8_t>(lo, s, zp), lo, s);
    ASSERT_NEAR(fake_quantize<uint8_t>(hi, s, zp), hi, s);
  }
}

TEST(QuantParams, SymmetricSchemes) {
  Result<ir::QuantParams> s8 = activation_params(Range{-2.0f, 1.0f}, ActScheme::kS8Symmetric);
  ASSERT_TRUE(s8.ok());
  EXPECT_EQ(s8->storage, DType::kI8);
  EXPECT_EQ(s8->zero_point[0], 0);
  EXPECT_EQ(s8->scale[0], 2.0f / 127.0f);
  EXPECT_EQ(quantize_value<int8_t>(-2.0f, s8->scale[0], 0), -127);
  Result<ir::QuantParams> s16 = activation_params(Range{-0.5f, 2.0f}, ActScheme::kS16Symmetric);
  ASSERT_TRUE(s16.ok());
  EXPECT_EQ(s16->storage, DType::kI16);
  EXPECT_EQ(s16->scale[0], 2.0f / 32767.0f);
  EXPECT_EQ(quantize_value<int16_t>(2.0f, s16->scale[0], 0), 32767);
  ASSERT_TRUE(parse_act_scheme("u8").ok());
  EXPECT_EQ(*parse_act_scheme("s16"), ActScheme::kS16Symmetric);
  EXPECT_FALSE(parse_act_scheme("int8").ok());
}

TEST(QuantParams, BadRangesRejected) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(activation_params(Range{nan, 1.0f}, ActScheme::kU8Asymmetric).ok());
  EXPECT_FALSE(activation_params(Range{0.0f, inf}, ActScheme::kS8Symmetric).ok());
  EXPECT_FALSE(activation_params(Range{2.0f, 1.0f}, ActScheme::kS8Symmetric).ok());
  // too wide for an f32 scale
  EXPECT_FALSE(activation_params(Range{-3e38f, 3e38f}, ActScheme::kU8Asymmetric).ok());
  // degenerate: scale 1
  Result<ir::QuantParams> tiny = activation_params(Range{-1e-44f, 1e-44f}, ActScheme::kS8Symmetric);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->scale[0], 1.0f);
}

TEST(QuantParams, PerChannelWeights) {
  // [3 channels, 4]: channel 1 all zero, channel 2 with its largest magnitude negative
  Tensor w = Tensor::from_vector<float>({0.5f, -0.25f, 1.0f, 0.1f,  //
                                         0.0f, 0.0f, 0.0f, 0.0f,    //
                                         -2.54f, 1.27f, 0.01f, 2.0f},
                                        {3, 4});
  Result<QuantizedTensor> q = quantize_weights_per_channel(w, 0);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->data.dtype(), DType::kI8);
  EXPECT_EQ(q->data.dims(), w.dims());
  EXPECT_EQ(q->params.axis, 0);
  EXPECT_EQ(q->params.storage, DType::kI8);
  ASSERT_EQ(q->params.scale.size(), 3u);
  EXPECT_EQ(q->params.scale[0], 1.0f / 127.0f);
  EXPECT_EQ(q->params.scale[1], 1.0f);  // all-zero channel: positive, finite
  EXPECT_EQ(q->params.scale[2], 2.54f / 127.0f);
  EXPECT_EQ(q->params.zero_point, (std::vector<int64_t>{0, 0, 0}));
  const int8_t* d = q->data.data<int8_t>();
  EXPECT_EQ(d[2], 127);
  EXPECT_EQ(d[0], 64);  // 63.5 -> 64 (ties to even)
  for (int i = 4; i < 8; ++i) EXPECT_EQ(d[i], 0);
  EXPECT_EQ(d[8], -127);
  EXPECT_EQ(d[9], 64);  // 1.27 / (2.54 / 127) = 63.5 -> 64 (ties to even)
  for (int64_t i = 0; i < w.numel(); ++i) {
    float s = q->params.scale[static_cast<size_t>(i / 4)];
    EXPECT_LE(std::fabs(dequantize_value(d[i], s, 0) - w.data<float>()[i]), 0.5f * s + 1e-7f) << i;
  }
}

TEST(QuantParams, PerChannelWeightsLastAxisAndErrors) {
  // MatMul weights [K=2, N=3], channels along N (axis -1)
  Tensor w = Tensor::from_vector<float>({1.0f, -4.0f, 0.0f, -2.0f, 0.5f, 0.0f}, {2, 3});
  Result<QuantizedTensor> q = quantize_weights_per_channel(w, -1);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->params.axis, 1);
  EXPECT_EQ(q->params.scale, (std::vector<float>{2.0f / 127.0f, 4.0f / 127.0f, 1.0f}));
  const int8_t* d = q->data.data<int8_t>();
  EXPECT_EQ(d[0], 64);    // 1 / (2/127) = 63.5 -> 64
  EXPECT_EQ(d[3], -127);  // -2
  EXPECT_EQ(d[1], -127);  // -4
  EXPECT_EQ(d[4], 16);    // 0.5 / (4/127) = 15.875
  EXPECT_FALSE(quantize_weights_per_channel(w, 2).ok());
  EXPECT_FALSE(quantize_weights_per_channel(w, -3).ok());
  Tensor bad = Tensor::from_vector<float>({1.0f, std::numeric_limits<float>::quiet_NaN()}, {2});
  EXPECT_EQ(quantize_weights_per_channel(bad, 0).status().code(), StatusCode::kInvalidArgument);
  Tensor ints = Tensor::from_vector<int32_t>({1, 2}, {2});
  EXPECT_EQ(quantize_weights_per_channel(ints, 0).status().code(), StatusCode::kUnsupported);
}

TEST(QuantParams, BiasQuantization) {
  Tensor b = Tensor::from_vector<float>({1.0f, -1.0f}, {2});
  const float ws[] = {0.01f, 0.02f};
  Result<QuantizedBias> q = quantize_bias(b, 0.5f, ws);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->tensor.data.dtype(), DType::kI32);
  EXPECT_EQ(q->tensor.params.storage, DType::kI32);
  EXPECT_EQ(q->tensor.params.axis, 0);
  EXPECT_EQ(q->tensor.params.scale[0], 0.5f * 0.01f);
  EXPECT_EQ(q->tensor.data.data<int32_t>()[0], 200);
  EXPECT_EQ(q->tensor.data.data<int32_t>()[1], -100);
  EXPECT_EQ(q->saturated, 0);

  // 1e9 / 1e-6 = 1e15 does not fit int32: saturates both ways and is counted
  Tensor big = Tensor::from_vector<float>({1e9f, -1e9f, 3.0f}, {3});
  const float one[] = {1e-3f};
  Result<QuantizedBias> s = quantize_bias(big, 1e-3f, one);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->tensor.params.axis, -1);
  EXPECT_EQ(s->tensor.data.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(s->tensor.data.data<int32_t>()[1], std::numeric_limits<int32_t>::lowest());
  EXPECT_EQ(s->tensor.data.data<int32_t>()[2], static_cast<int32_t>(std::nearbyint(3.0f / (1e-3f * 1e-3f))));
  EXPECT_EQ(s->saturated, 2);

  EXPECT_FALSE(quantize_bias(b, 0.0f, ws).ok());   // zero scale
  EXPECT_FALSE(quantize_bias(big, 0.5f, ws).ok());  // 3 elements, 2 scales
  const float under[] = {1e-30f};
  EXPECT_FALSE(quantize_bias(b, 1e-30f, under).ok());  // product underflows to 0
}

}  // namespace
}  // namespace nfuse::quant
