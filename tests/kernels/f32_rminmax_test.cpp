// f32_rminmax.h kernels (every ISA this CPU runs) against the definition, a plain std::min /
// std::max loop: every length 0..200 and 1000 (vector steps, the four-accumulator steps and
// tails), seeds other than 0, NaNs anywhere (skipped), +-inf, -0, denormals, all-NaN input
// (the seed comes back), the extreme at the first, a middle and the last position, and a guard
// after n that would win if read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/f32-rminmax/f32_rminmax.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void expect_range(F32MinMaxFn fn, const std::vector<float>& x, size_t n, float seed_lo, float seed_hi,
                  const std::string& what) {
  float lo = seed_lo, hi = seed_hi;
  for (size_t i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  float got_lo = seed_lo, got_hi = seed_hi;
  fn(x.data(), n, &got_lo, &got_hi);
  ASSERT_EQ(got_lo, lo) << what << " n " << n;
  ASSERT_EQ(got_hi, hi) << what << " n " << n;
}

TEST(F32Rminmax, MatchesTheDefinition) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> values(-50.0f, 50.0f);
  const float specials[] = {kNaN, -0.0f, 1e-40f, -1e-40f};
  for (Isa isa : test::available_isas()) {
    const F32MinMaxFn fn = f32_rminmax_select(isa);
    const std::string what = "isa " + std::to_string(static_cast<int>(isa));
    for (size_t n = 0; n <= 1000; n = n < 200 ? n + 1 : (n == 200 ? 1000 : 1001)) {
      std::vector<float> x(n + 1);
      for (size_t i = 0; i < n; ++i) x[i] = i % 7 == 3 ? specials[(i / 7) % 4] : values(rng);
      x[n] = (n % 2) ? 1e30f : -1e30f;  // past n: must not be read
      expect_range(fn, x, n, 0.0f, 0.0f, what);
      expect_range(fn, x, n, -1e6f, 1e6f, what);  // the seed wins
      expect_range(fn, x, n, 20.0f, -20.0f, what);
      if (n == 0) continue;
      for (size_t at : {size_t{0}, n / 2, n - 1}) {  // the extreme at each position, also as inf
        std::vector<float> y = x;
        y[at] = 1000.0f;
        expect_range(fn, y, n, 0.0f, 0.0f, what + " max at " + std::to_string(at));
        y[at] = -kInf;
        expect_range(fn, y, n, 0.0f, 0.0f, what + " -inf at " + std::to_string(at));
      }
      std::vector<float> nans(n + 1, kNaN);
      expect_range(fn, nans, n, -3.0f, 4.0f, what + " all NaN");
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
