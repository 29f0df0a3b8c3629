// FP32 small-channel direct convolution rows (src/kernels/f32-sconv) against a double-precision
// direct convolution, on every ISA this machine runs: 1, 3 and 4 input channels, kernels 1x1 to
// 7x7, stride 1 and 2, every padding up to half the kernel, rows from 1 to 150 pixels (inside one
// chunk, across chunks, ragged ends), odd and even output channel counts (the pair loop and the
// single one), rows of the padding (null), a clamp, no bias, and guard values after every output
// row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "support/kernel_isas.h"
#include "kernels/f32-sconv/f32_sconv.h"
#include "support/tolerances_kernels.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261130;
constexpr float kGuard = -7.75e33f;
constexpr size_t kGuardCount = 9;

using test::available_isas;

struct Case {
  size_t ci, k, sw, pad, w, co;
  bool bias, clamp, null_row;
};

void check(Isa isa, const Case& c, std::mt19937& rng) {
  const size_t wo = (c.w + 2 * c.pad - c.k) / c.sw + 1, taps = c.ci * c.k * c.k;
  const std::string what = std::string(isa_name(isa)) + " ci=" + std::to_string(c.ci) + " k=" + std::to_string(c.k) +
                           " sw=" + std::to_string(c.sw) + " pad=" + std::to_string(c.pad) + " w=" +
                           std::to_string(c.w) + " co=" + std::to_string(c.co);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> in(c.ci * c.k, std::vector<float>(c.w));
  for (auto& r : in)
    for (float& v : r) v = dist(rng);
  std::vector<const float*> rows(c.ci * c.k);
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = in[r].data();
  if (c.null_row) rows[rows.size() / 2] = nullptr;  // a row of the padding
  std::vector<float> w(c.co * taps), b(c.co);
  for (float& v : w) v = dist(rng);
  for (float& v : b) v = dist(rng);
  const size_t out_stride = wo + kGuardCount;
  std::vector<float> out(c.co * out_stride, kGuard);
  std::vector<float> ws(f32_sconv_workspace_floats(taps, wo), kGuard);
  F32SconvRowArgs a;
  a.rows = rows.data();
  a.ci = c.ci;
  a.kh = a.kw = c.k;
  a.sw = c.sw;
  a.pad_left = c.pad;
  a.w = c.w;
  a.wo = wo;
  a.co = c.co;
  a.weights = w.data();
  a.bias = c.bias ? b.data() : nullptr;
  a.out = out.data();
  a.out_stride = out_stride;
  if (c.clamp) a.min = -0.5f, a.max = 1.5f;
  a.workspace = ws.data();
  f32_sconv_row_kernel(isa)(a);
  for (size_t o = 0; o < c.co; ++o) {
    for (size_t x = 0; x < wo; ++x) {
      double s = c.bias ? b[o] : 0.0;
      for (size_t r = 0; r < c.ci * c.k; ++r) {
        if (!rows[r]) continue;
        for (size_t kx = 0; kx < c.k; ++kx) {
          const long long ix = static_cast<long long>(x * c.sw + kx) - static_cast<long long>(c.pad);
          if (ix < 0 || ix >= static_cast<long long>(c.w)) continue;
          s += static_cast<double>(w[o * taps + r * c.k + kx]) * rows[r][ix];
        }
      }
      if (c.clamp) s = std::clamp(s, -0.5, 1.5);
      ASSERT_NEAR(out[o * out_stride + x], s, test::f32_gemm_tol(s, taps)) << what << " at co " << o << " x " << x;
    }
    for (size_t x = wo; x < wo + kGuardCount; ++x) ASSERT_EQ(out[o * out_stride + x], kGuard) << what << " wrote past the row";
  }
}

TEST(F32Sconv, MatchesDirectConvolution) {
  std::mt19937 rng(kSeed);
  for (Isa isa : available_isas()) {
    for (size_t ci : {1, 3, 4})
      for (size_t k : {1, 3, 5, 6, 7})
        for (size_t sw : {1, 2})
          for (size_t pad = 0; pad <= k / 2; ++pad)
            for (size_t w : {1, 7, 16, 63, 64, 65, 150}) {
              if (w + 2 * pad < k || ci * k * k > kF32SconvMaxTaps) continue;
              const size_t co = std::uniform_int_distribution<size_t>(1, 17)(rng);
              const Case c{ci, k, sw, pad, w, co, rng() % 4 != 0, rng() % 3 == 0, rng() % 5 == 0};
              ASSERT_NO_FATAL_FAILURE(check(isa, c, rng));
            }
  }
}

}  // namespace
}  // namespace nfuse::kernels
