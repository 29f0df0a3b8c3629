// Per-layer accuracy metrics on hand-computed examples.
#include "quant/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "quant/quant_math.h"

namespace nfuse::quant {
namespace {

TEST(QuantMetrics, HandComputedExample) {
  const float ref[] = {1.0f, 2.0f, 3.0f}, got[] = {1.0f, 2.0f, 4.0f};
  ErrorMetrics m;
  m.update(ref, got, 3);
  ErrorSummary s = m.summary();
  EXPECT_EQ(s.count, 3);
  // dot 17, |r|^2 14, |x|^2 21, noise 1
  EXPECT_NEAR(s.cosine, 17.0 / std::sqrt(14.0 * 21.0), 1e-12);
  EXPECT_NEAR(s.snr_db, 10.0 * std::log10(14.0), 1e-12);  // 11.46 dB
  EXPECT_EQ(s.max_abs_error, 1.0);
  EXPECT_NEAR(s.mean_abs_error, 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(s.rmse, std::sqrt(1.0 / 3.0), 1e-15);
}

TEST(QuantMetrics, SignFlipAndScale) {
  const float ref[] = {1.0f, 2.0f, 3.0f}, neg[] = {-1.0f, -2.0f, -3.0f}, twice[] = {2.0f, 4.0f, 6.0f};
  ErrorMetrics a;
  a.update(ref, neg, 3);
  EXPECT_NEAR(a.summary().cosine, -1.0, 1e-12);
  EXPECT_NEAR(a.summary().snr_db, 10.0 * std::log10(14.0 / 56.0), 1e-12);  // -6.02 dB
  EXPECT_EQ(a.summary().max_abs_error, 6.0);
  ErrorMetrics b;
  b.update(ref, twice, 3);
  EXPECT_NEAR(b.summary().cosine, 1.0, 1e-12);  // cosine ignores scale, SNR does not
  EXPECT_NEAR(b.summary().snr_db, 0.0, 1e-12);
}

TEST(QuantMetrics, ExactMatchAndZeroVectors) {
  const float ref[] = {0.5f, -7.0f}, zero[] = {0.0f, 0.0f};
  ErrorMetrics same;
  same.update(ref, ref, 2);
  EXPECT_EQ(same.summary().snr_db, kSnrCapDb);
  EXPECT_EQ(same.summary().cosine, 1.0);
  EXPECT_EQ(same.summary().max_abs_error, 0.0);
  ErrorMetrics zeros;
  zeros.update(zero, zero, 2);
  EXPECT_EQ(zeros.summary().snr_db, kSnrCapDb);
  EXPECT_EQ(zeros.summary().cosine, 1.0);
  ErrorMetrics zero_ref;
  zero_ref.update(zero, ref, 2);
  EXPECT_EQ(zero_ref.summary().snr_db, -kSnrCapDb);
  EXPECT_EQ(zero_ref.summary().cosine, 0.0);
  ErrorMetrics zero_got;
  zero_got.update(ref, zero, 2);
  EXPECT_EQ(zero_got.summary().cosine, 0.0);
  EXPECT_NEAR(zero_got.summary().snr_db, 0.0, 1e-12);
  ErrorMetrics empty;
  EXPECT_EQ(empty.summary().count, 0);
  EXPECT_EQ(empty.summary().mean_abs_error, 0.0);
}

TEST(QuantMetrics, NonFinitePairs) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float ref[] = {nan, inf, 1.0f, 2.0f}, got[] = {nan, inf, 1.0f, 2.0f};
  ErrorMetrics m;
  m.update(ref, got, 4);
  ErrorSummary s = m.summary();
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.nonfinite_matches, 2);
  EXPECT_EQ(s.nonfinite_mismatches, 0);
  EXPECT_EQ(s.snr_db, kSnrCapDb);
  const float ref2[] = {1.0f, inf}, got2[] = {nan, -inf};
  m.update(ref2, got2, 2);
  s = m.summary();
  EXPECT_EQ(s.nonfinite_mismatches, 2);
  EXPECT_TRUE(std::isinf(s.max_abs_error));
  EXPECT_EQ(s.count, 2);
}

TEST(QuantMetrics, StreamingEqualsOneBatch) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> ref(10007), got(10007);
  for (size_t i = 0; i < ref.size(); ++i) {
    ref[i] = d(rng);
    got[i] = ref[i] + 0.01f * d(rng);
  }
  ErrorMetrics whole, parts, merged, tail;
  whole.update(ref.data(), got.data(), ref.size());
  for (size_t i = 0; i < ref.size(); i += 1000) parts.update(ref.data() + i, got.data() + i, std::min<size_t>(1000, ref.size() - i));
  merged.update(ref.data(), got.data(), 5000);
  tail.update(ref.data() + 5000, got.data() + 5000, ref.size() - 5000);
  merged.merge(tail);
  for (const ErrorMetrics* m : {&parts, &merged}) {
    EXPECT_EQ(m->summary().count, whole.summary().count);
    EXPECT_NEAR(m->summary().snr_db, whole.summary().snr_db, 1e-9);
    EXPECT_NEAR(m->summary().cosine, whole.summary().cosine, 1e-12);
    EXPECT_EQ(m->summary().max_abs_error, whole.summary().max_abs_error);
  }
  EXPECT_NEAR(whole.summary().snr_db, 40.0, 0.3);  // noise 1% of the signal's amplitude
}

TEST(QuantMetrics, EightBitUniformQuantizationSnr) {
  // Full-scale uniform data on the s8 grid: SNR = 10 log10((A^2/3) / (step^2/12)) = 10 log10(4 * 127^2)
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const float scale = 1.0f / 127.0f;
  std::vector<float> ref(1 << 18), got(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    ref[i] = d(rng);
    got[i] = fake_quantize<int8_t>(ref[i], scale, 0);
  }
  ErrorMetrics m;
  m.update(ref.data(), got.data(), ref.size());
  EXPECT_NEAR(m.summary().snr_db, 10.0 * std::log10(4.0 * 127.0 * 127.0), 0.1);  // 48.1 dB
  EXPECT_LE(m.summary().max_abs_error, 0.5 * scale + 1e-7);
  EXPECT_GT(m.summary().cosine, 0.9999);
}

}  // namespace
}  // namespace nfuse::quant
