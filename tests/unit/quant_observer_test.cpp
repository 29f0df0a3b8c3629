// Calibration observer: statistics over batches and the ranges each method picks, on known
// distributions with fixed seeds.
#include "quant/observer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "quant/quant_math.h"
#include "quant/quant_params.h"

namespace nfuse::quant {
namespace {

std::vector<float> gaussian(size_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> uniform(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// N(0, 1) with three far outliers (7e-7 of the mass): the case clipping is for.
std::vector<float> gaussian_with_outliers() {
  std::vector<float> v = gaussian(size_t{1} << 22, 7);
  v[1000] = 100.0f;
  v[2000000] = -90.0f;
  v[3000000] = 80.0f;
  return v;
}

Observer observe(const std::vector<float>& v, size_t batch = 65536) {
  Observer o;
  for (size_t i = 0; i < v.size(); i += batch) {
    Status s = o.update(v.data() + i, std::min(batch, v.size() - i));
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return o;
}

Range must_range(const Observer& o, Method m, MethodOptions opt = {}) {
  Result<Range> r = o.range(m, opt);
  EXPECT_TRUE(r.ok()) << method_name(m) << ": " << r.status().to_string();
  return r.ok() ? *r : Range{};
}

// Mean squared error of v after a round trip through the scheme's quantization of range r.
double quant_mse(const std::vector<float>& v, Range r, ActScheme scheme) {
  Result<ir::QuantParams> p = activation_params(r, scheme);
  EXPECT_TRUE(p.ok());
  const float s = p->scale[0];
  const int64_t zp = p->zero_point[0];
  double sum = 0.0;
  for (float x : v) {
    float y = scheme == ActScheme::kU8Asymmetric ? fake_quantize<uint8_t>(x, s, zp) : fake_quantize<int8_t>(x, s, zp);
    sum += (static_cast<double>(x) - y) * (static_cast<double>(x) - y);
  }
  return sum / static_cast<double>(v.size());
}

constexpr Method kSearches[] = {Method::kMse, Method::kEntropy, Method::kSqnr};

TEST(QuantObserver, MinMaxIsExactOverBatches) {
  std::vector<float> v = uniform(100000, 1, -3.0f, 5.0f);
  v[12345] = -7.25f;
  v[99999] = 9.5f;
  Observer o = observe(v, 777);
  Range r = must_range(o, Method::kMinMax);
  EXPECT_EQ(r.min, -7.25f);
  EXPECT_EQ(r.max, 9.5f);
  EXPECT_EQ(o.count(), 100000);
  EXPECT_EQ(o.limit(), 16.0);  // the smallest power of two >= 9.5
}

TEST(QuantObserver, HistogramIndependentOfBatchOrderAndSplit) {
  // Small values first, then growing ones: forces several re-binnings in one order, none in the other.
  std::vector<float> v = gaussian(50000, 3, 0.01f);
  std::vector<float> big = gaussian(50000, 4, 40.0f);
  v.insert(v.end(), big.begin(), big.end());
  Observer a = observe(v, 1000);
  std::vector<float> rev(v.rbegin(), v.rend());
  Observer b = observe(rev, 50000 * 2);
  ASSERT_EQ(a.limit(), b.limit());
  EXPECT_TRUE(std::equal(a.bins().begin(), a.bins().end(), b.bins().begin()));
  // merge of two halves equals observing everything
  std::vector<float> first(v.begin(), v.begin() + 50000), second(v.begin() + 50000, v.end());
  Observer c = observe(first), d = observe(second);
  c.merge(d);
  ASSERT_EQ(c.limit(), a.limit());
  EXPECT_TRUE(std::equal(a.bins().begin(), a.bins().end(), c.bins().begin()));
  EXPECT_EQ(c.count(), a.count());
  EXPECT_EQ(c.min(), a.min());
  EXPECT_EQ(c.max(), a.max());
  for (Method m : kSearches) {
    EXPECT_EQ(must_range(a, m).max, must_range(b, m).max) << method_name(m);
  }
}

TEST(QuantObserver, RebinningPutsValuesInTheirFinalBins) {
  Observer grown, direct;
  const float small[] = {0.75f, -0.3f, 0.001f}, large[] = {3.0f};
  ASSERT_TRUE(grown.update(small, 3).ok());
  ASSERT_TRUE(grown.update(large, 1).ok());
  const float all[] = {3.0f, 0.75f, -0.3f, 0.001f};
  ASSERT_TRUE(direct.update(all, 4).ok());
  EXPECT_EQ(grown.limit(), 4.0);
  EXPECT_TRUE(std::equal(grown.bins().begin(), grown.bins().end(), direct.bins().begin()));
  // 0.75 lands in bin floor((0.75 + 4) * 4096 / 8) = 2432
  EXPECT_EQ(direct.bins()[2432], 1u);
}

TEST(QuantObserver, PercentileCutsOutliers) {
  std::vector<float> v = gaussian_with_outliers();
  Observer o = observe(v);
  MethodOptions opt;
  opt.percentile = 99.99;  // |x| > 3.89 for N(0, 1)
  Range r = must_range(o, Method::kPercentile, opt);
  EXPECT_GT(r.max, 3.7f);
  EXPECT_LT(r.max, 4.2f);
  EXPECT_EQ(r.min, -r.max);
  opt.symmetric = false;  // 0.005% per tail: 3.89 again
  Range a = must_range(o, Method::kPercentile, opt);
  EXPECT_GT(a.max, 3.7f);
  EXPECT_LT(a.max, 4.2f);
  EXPECT_LT(a.min, -3.7f);
  EXPECT_GT(a.min, -4.2f);
  opt.percentile = 100.0;
  Range full = must_range(o, Method::kPercentile, opt);
  EXPECT_EQ(full.min, -90.0f);
  EXPECT_EQ(full.max, 100.0f);
  // a lower percentile gives a smaller threshold
  opt.symmetric = true;
  opt.percentile = 95.0;  // 1.96
  Range p95 = must_range(o, Method::kPercentile, opt);
  EXPECT_NEAR(p95.max, 1.96f, 0.1f);
}

TEST(QuantObserver, SearchesClipOutliersAndReduceQuantizationError) {
  std::vector<float> v = gaussian_with_outliers();
  Observer o = observe(v);
  const double minmax_err = quant_mse(v, must_range(o, Method::kMinMax), ActScheme::kS8Symmetric);
  for (Method m : kSearches) {
    Range r = must_range(o, m);
    EXPECT_LT(r.max, 50.0f) << method_name(m);  // absmax is 100
    EXPECT_GT(r.max, 3.0f) << method_name(m);
    EXPECT_EQ(r.min, -r.max) << method_name(m);
    const double err = quant_mse(v, r, ActScheme::kS8Symmetric);
    EXPECT_LT(err, 0.5 * minmax_err) << method_name(m) << " mse " << err << " vs minmax " << minmax_err;
  }
  // u8: the same holds for asymmetric ranges
  MethodOptions asym;
  asym.symmetric = false;
  const double minmax_u8 = quant_mse(v, must_range(o, Method::kMinMax, asym), ActScheme::kU8Asymmetric);
  for (Method m : kSearches) {
    Range r = must_range(o, m, asym);
    EXPECT_LT(quant_mse(v, r, ActScheme::kU8Asymmetric), 0.5 * minmax_u8) << method_name(m);
  }
}

TEST(QuantObserver, MseModelMatchesMeasuredError) {
  // The search's cost model (rounding step^2/12 + clipping) predicts the measured error.
  std::vector<float> v = gaussian_with_outliers();
  Observer o = observe(v);
  for (float t : {4.0f, 8.0f, 100.0f}) {
    Range r{-t, t};
    NoiseEstimate e = estimate_noise(o.view(), r, 8, true);
    double predicted = (e.rounding + e.clipping) / static_cast<double>(v.size());
    double measured = quant_mse(v, r, ActScheme::kS8Symmetric);
    EXPECT_NEAR(predicted, measured, 0.1 * measured) << "t=" << t;
  }
}

TEST(QuantObserver, SearchesKeepNearlyAllOfUniformData) {
  std::vector<float> v = uniform(1 << 20, 11, -2.0f, 2.0f);
  Observer o = observe(v);
  const float absmax = std::max(-o.min(), o.max());
  for (Method m : kSearches) {
    Range r = must_range(o, m);
    EXPECT_GT(r.max, 0.95f * absmax) << method_name(m);
    EXPECT_LE(r.max, absmax) << method_name(m);
  }
  Range p = must_range(o, Method::kPercentile);
  EXPECT_GT(p.max, 0.99f * absmax);
}

TEST(QuantObserver, MseThresholdForGaussianMatchesTheory) {
  // Optimal clipping of N(0, 1) (Banner et al., ACIQ): about 2.5 sigma at 4 bits, 1.7 at 2 bits.
  std::vector<float> v = gaussian(1 << 20, 5);
  Observer o = observe(v);
  MethodOptions opt;
  opt.bits = 4;
  Range r4 = must_range(o, Method::kMse, opt);
  EXPECT_GT(r4.max, 2.2f);
  EXPECT_LT(r4.max, 3.0f);
  opt.bits = 2;
  Range r2 = must_range(o, Method::kMse, opt);
  EXPECT_LT(r2.max, r4.max);
  // more bits: less rounding noise, so less clipping
  opt.bits = 8;
  EXPECT_GT(must_range(o, Method::kMse, opt).max, r4.max);
}

TEST(QuantObserver, SqnrWithUnitClipWeightIsMseAndDefaultClipsLess) {
  std::vector<float> v = gaussian_with_outliers();
  Observer o = observe(v);
  MethodOptions opt;
  opt.bits = 4;
  const float mse_t = must_range(o, Method::kMse, opt).max;
  opt.sqnr_clip_weight = 1.0;
  EXPECT_EQ(must_range(o, Method::kSqnr, opt).max, mse_t);
  opt.sqnr_clip_weight = 3.0;
  EXPECT_GT(must_range(o, Method::kSqnr, opt).max, mse_t);
}

TEST(QuantObserver, ReluOutputsGiveOneSidedAsymmetricRanges) {
  std::vector<float> v = gaussian(1 << 20, 9);
  for (float& x : v) x = std::max(x, 0.0f);
  Observer o = observe(v);
  EXPECT_GT(o.zero_count(), (1 << 19) - 5000);
  EXPECT_LT(o.zero_count(), (1 << 19) + 5000);
  MethodOptions asym;
  asym.symmetric = false;
  for (Method m : {Method::kMinMax, Method::kPercentile, Method::kMse, Method::kEntropy, Method::kSqnr}) {
    Range r = must_range(o, m, asym);
    EXPECT_EQ(r.min, 0.0f) << method_name(m);
    EXPECT_GT(r.max, 2.5f) << method_name(m);
    EXPECT_LE(r.max, o.max()) << method_name(m);
  }
}

TEST(QuantObserver, ConstantData) {
  std::vector<float> v(10000, 3.0f);
  Observer o = observe(v, 999);
  Range mm = must_range(o, Method::kMinMax);
  EXPECT_EQ(mm.min, 3.0f);
  EXPECT_EQ(mm.max, 3.0f);
  MethodOptions asym;
  asym.symmetric = false;
  // Percentile and entropy find 3 exactly; mse / sqnr's uniform rounding model over-states the
  // rounding of a point mass and may settle one bin (8 / 4096) below it.
  const float bin = 8.0f / 4096.0f;
  for (Method m : {Method::kPercentile, Method::kMse, Method::kEntropy, Method::kSqnr}) {
    const float tol = (m == Method::kMse || m == Method::kSqnr) ? bin : 0.0f;
    Range r = must_range(o, m);
    EXPECT_NEAR(r.max, 3.0f, tol) << method_name(m);
    EXPECT_EQ(r.min, -r.max) << method_name(m);
    Range a = must_range(o, m, asym);
    // asymmetric percentile keeps to [min, max] like minmax; the searches' ranges hold 0
    EXPECT_EQ(a.min, m == Method::kPercentile ? 3.0f : 0.0f) << method_name(m);
    EXPECT_NEAR(a.max, 3.0f, tol) << method_name(m);
  }
}

TEST(QuantObserver, AllZeroData) {
  std::vector<float> v(5000, 0.0f);
  Observer o = observe(v);
  EXPECT_EQ(o.zero_count(), 5000);
  EXPECT_EQ(o.limit(), 0.0);
  for (Method m : {Method::kMinMax, Method::kPercentile, Method::kMse, Method::kEntropy, Method::kSqnr}) {
    Range r = must_range(o, m);
    EXPECT_EQ(r.min, 0.0f) << method_name(m);
    EXPECT_EQ(r.max, 0.0f) << method_name(m);
  }
  Result<ir::QuantParams> p = activation_params(Range{0.0f, 0.0f}, ActScheme::kU8Asymmetric);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scale[0], 1.0f);
  EXPECT_EQ(p->zero_point[0], 0);
}

TEST(QuantObserver, NanIgnoredInfRejected) {
  std::vector<float> v = gaussian(4096, 13);
  Observer clean = observe(v);
  std::vector<float> with_nan = v;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  with_nan.insert(with_nan.begin() + 10, nan);
  with_nan.push_back(nan);
  Observer o = observe(with_nan);
  EXPECT_EQ(o.nan_count(), 2);
  EXPECT_EQ(o.count(), clean.count());
  EXPECT_TRUE(std::equal(o.bins().begin(), o.bins().end(), clean.bins().begin()));
  EXPECT_EQ(must_range(o, Method::kMinMax).max, must_range(clean, Method::kMinMax).max);

  const float bad[] = {1.0f, std::numeric_limits<float>::infinity(), 1000.0f};
  Status s = o.update(bad, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(o.count(), clean.count());  // the whole batch was left out
  EXPECT_EQ(o.max(), clean.max());
  const float neg_inf[] = {-std::numeric_limits<float>::infinity()};
  EXPECT_FALSE(o.update(neg_inf, 1).ok());

  Observer only_nan;
  const float nans[] = {nan, nan};
  ASSERT_TRUE(only_nan.update(nans, 2).ok());
  EXPECT_FALSE(only_nan.range(Method::kMinMax).ok());
  EXPECT_FALSE(Observer().range(Method::kMse).ok());
}

TEST(QuantObserver, InvalidOptionsAndNames) {
  Observer o = observe(gaussian(1000, 1));
  MethodOptions opt;
  opt.percentile = 0.0;
  EXPECT_FALSE(o.range(Method::kPercentile, opt).ok());
  opt.percentile = 100.5;
  EXPECT_FALSE(o.range(Method::kPercentile, opt).ok());
  opt = {};
  opt.bits = 1;
  EXPECT_FALSE(o.range(Method::kMse, opt).ok());
  opt.bits = 17;
  EXPECT_FALSE(o.range(Method::kEntropy, opt).ok());
  for (Method m : {Method::kMinMax, Method::kPercentile, Method::kMse, Method::kEntropy, Method::kSqnr}) {
    Result<Method> p = parse_method(method_name(m));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, m);
  }
  EXPECT_FALSE(parse_method("kl").ok());
}

TEST(QuantObserver, SixteenBitSearchesKeepTheRange) {
  // At 16 bits rounding noise is negligible: mse/sqnr keep (almost) everything and entropy,
  // whose histogram is coarser than the grid, returns absmax.
  std::vector<float> v = gaussian(1 << 18, 17);
  Observer o = observe(v);
  const float absmax = std::max(-o.min(), o.max());
  MethodOptions opt;
  opt.bits = 16;
  EXPECT_EQ(must_range(o, Method::kEntropy, opt).max, absmax);
  EXPECT_GT(must_range(o, Method::kMse, opt).max, 0.95f * absmax);
}

}  // namespace
}  // namespace nfuse::quant
