// The W * X quantized GEMM (src/kernels/qu8-gemm/qu8_wxgemm.h) against the definition: an int64
// accumulator of W * (X - x_zp) + bias per row, requantized by nfuse::requantize_value with the
// row's multiplier and clamped. Bit-exact, every configuration this CPU runs (scalar always),
// over every mr x nc edge of the 8x32 tile, K tails (K % 4 != 0, K = 1), u8/s8 activations and
// outputs, zero points at both ends, extreme operands (255 x 127 / 0 x -128 over a long K), big
// biases, tiny / huge multipliers and exact .5 ties. Guard bytes catch writes outside the tile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

constexpr uint8_t kGuard = 0xA5;

struct WxCase {
  size_t m = 8, n = 32, k = 16;
  bool x_signed = false, c_signed = false;
  int32_t x_zp = 0, c_zp = 0;
  int fill = 0;    // 0 random, 1 extreme (x max, w alternating 127 / -128), 2 small (+-2 around x_zp)
  int mult = 0;    // 0 spread, 1 tiny, 2 huge, 3 halves (exact .5 ties with small values)
  bool big_bias = false;
  size_t c_pad = 3;  // extra bytes per C row (guarded)
};

std::string describe(const Qu8WxConfig& cfg, const WxCase& c) {
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s M=%zu N=%zu K=%zu x_s=%d c_s=%d x_zp=%d c_zp=%d fill=%d mult=%d big_bias=%d",
                cfg.name, c.m, c.n, c.k, c.x_signed, c.c_signed, c.x_zp, c.c_zp, c.fill, c.mult, c.big_bias);
  return buf;
}

void check(const Qu8WxConfig& cfg, const WxCase& c, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255), delta(-2, 2);
  std::vector<uint8_t> x(c.k * c.n);  // [K x N] row-major, bits of u8 or s8
  for (uint8_t& v : x) {
    v = static_cast<uint8_t>(byte(rng));
    if (c.fill == 1) v = c.x_signed ? 0x7F : 0xFF;
    if (c.fill == 2) {
      const int lo = c.x_signed ? -128 : 0;
      v = static_cast<uint8_t>(std::min(lo + 255, std::max(lo, c.x_zp + delta(rng))));
    }
  }
  std::vector<int8_t> w(c.m * c.k);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<int8_t>(c.fill == 1 ? ((i / c.k) % 2 == 0 ? 127 : -128) : byte(rng) - 128);
  }
  std::vector<int32_t> bias(c.m);
  std::uniform_int_distribution<int32_t> small_bias(-20000, 20000), big(-(1 << 30), 1 << 30);
  for (int32_t& b : bias) b = c.big_bias ? big(rng) : (c.fill == 2 ? small_bias(rng) % 51 : small_bias(rng));
  std::vector<float> mult(c.m);
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  const float spread = 40.0f / (128.0f * 128.0f * std::sqrt(static_cast<float>(c.k)));
  for (float& v : mult) v = c.mult == 0 ? spread * u(rng) : c.mult == 1 ? 1e-12f * u(rng) : c.mult == 2 ? 1e6f * u(rng) : 0.5f;

  std::vector<uint8_t> packed_w(qu8_wxgemm_packed_w_size(cfg, c.m, c.k));
  qu8_wxgemm_pack_w(cfg, c.m, c.k, w.data(), bias.data(), mult.data(), c.x_zp, c.x_signed, packed_w.data());
  const size_t kpad = (c.k + 3) / 4 * 4;
  const size_t ldc = c.n + c.c_pad;
  std::vector<uint8_t> out(c.m * ldc, kGuard);
  std::vector<uint8_t> panel(kpad * cfg.nr);
  const size_t w_panel = qu8_wxgemm_packed_w_size(cfg, cfg.mr, c.k);
  const Qu8GemmRequant rq = qu8_requant(c.c_signed, c.c_zp, c.c_signed ? -128 : 0, c.c_signed ? 127 : 255);
  for (size_t j = 0; j < c.n; j += cfg.nr) {
    const size_t nc = std::min(cfg.nr, c.n - j);
    std::fill(panel.begin(), panel.end(), kGuard);  // the pack must write every byte it owns
    qu8_wxgemm_pack_x(cfg, c.k, nc, x.data() + j, c.n, c.x_signed, panel.data());
    for (size_t i = 0; i < c.m; i += cfg.mr) {
      cfg.ukernel(std::min(cfg.mr, c.m - i), nc, kpad, packed_w.data() + i / cfg.mr * w_panel, panel.data(),
                  out.data() + i * ldc + j, ldc, rq);
    }
  }
  for (size_t i = 0; i < c.m; ++i) {
    for (size_t j = 0; j < ldc; ++j) {
      const uint8_t got = out[i * ldc + j];
      if (j >= c.n) {
        ASSERT_EQ(got, kGuard) << describe(cfg, c) << " write outside C at " << i << "," << j;
        continue;
      }
      int64_t acc = bias[i];
      for (size_t kk = 0; kk < c.k; ++kk) {
        const int64_t xv = c.x_signed ? static_cast<int8_t>(x[kk * c.n + j]) : x[kk * c.n + j];
        acc += (xv - c.x_zp) * w[i * c.k + kk];
      }
      const int32_t q = c.c_signed ? nfuse::requantize_value<int8_t>(acc, mult[i], c.c_zp)
                                   : nfuse::requantize_value<uint8_t>(acc, mult[i], c.c_zp);
      ASSERT_EQ(got, static_cast<uint8_t>(q)) << describe(cfg, c) << " at " << i << "," << j << " acc " << acc;
    }
  }
}

TEST(Qu8WxGemm, TileEdgesAndKTails) {
  std::mt19937 rng(20261129);
  for (const Qu8WxConfig* cfg : qu8_wxgemm_configs()) {
    for (size_t m : {1, 3, 7, 8, 9, 16, 23}) {
      for (size_t n : {1, 3, 4, 5, 15, 16, 17, 18, 20, 21, 31, 32, 33, 36, 49, 64, 70, 196}) {
        for (size_t k : {1, 2, 3, 4, 5, 9, 16, 27, 64}) {
          WxCase c;
          c.m = m, c.n = n, c.k = k;
          c.x_zp = static_cast<int32_t>((m * 31 + n * 7 + k) % 256);
          c.c_zp = static_cast<int32_t>((m * 13 + n + k * 5) % 256);
          check(*cfg, c, rng);
        }
      }
    }
  }
}

TEST(Qu8WxGemm, SignsZeroPointsAndExtremes) {
  std::mt19937 rng(7);
  for (const Qu8WxConfig* cfg : qu8_wxgemm_configs()) {
    for (int xs = 0; xs < 2; ++xs) {
      for (int cs = 0; cs < 2; ++cs) {
        for (int fill = 0; fill < 3; ++fill) {
          for (int mult = 0; mult < 4; ++mult) {
            if (mult == 3 && fill != 2) continue;  // halves only tie with small accumulators
            for (int32_t zp : {-128, 0, 127, 255}) {
              WxCase c;
              c.m = 13, c.n = 45, c.k = fill == 1 ? 1155 : 37;
              c.x_signed = xs, c.c_signed = cs;
              c.x_zp = xs ? std::max(-128, std::min(127, zp)) : std::max(0, zp);
              c.c_zp = cs ? std::max(-128, std::min(127, -zp / 2)) : std::max(0, 255 - std::max(0, zp));
              c.fill = fill, c.mult = mult;
              c.big_bias = fill == 0 && mult == 0 && zp == 0;
              check(*cfg, c, rng);
            }
          }
        }
      }
    }
  }
}

// The float epilogue of a dynamically quantized convolution: weights packed once with no zero
// point, the run's zero point a and scales set by qu8_wxgemm_set_row_params (bias' = -a * row
// sum), y = f32(int32 acc) * multiplier + row bias, a multiply then an add (the definition below
// rounds both, as the ref does); with row factors c_r (u8 weights, whose zero point is not
// folded) the cross term c_r * (column sum of the packed X panel - K a) joins the accumulator,
// so acc = sum (x - a)(w + c_r); then the clamp of a fused Relu / Clip. Every tile edge; guard floats catch writes
// outside the tile.
// The per-column sums of a packed X panel against the plain sum, K up to 5000 (several 256-group
// folds of the 16-bit partial sums), random bytes and all 255 (each partial field at its limit).
TEST(Qu8WxGemm, PanelColumnSums) {
  std::mt19937 rng(37);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Qu8WxConfig* cfg : qu8_wxgemm_configs()) {
    for (size_t k : {1, 4, 300, 1024, 1028, 2047, 5000}) {
      for (bool saturated : {false, true}) {
        const size_t kpad = (k + 3) / 4 * 4, nc = cfg->nr;
        std::vector<uint8_t> x(k * nc);
        for (uint8_t& v : x) v = saturated ? 255 : static_cast<uint8_t>(byte(rng));
        std::vector<uint8_t> panel(kpad * cfg->nr);
        qu8_wxgemm_pack_x(*cfg, k, nc, x.data(), nc, false, panel.data());
        int32_t sums[32];
        qu8_wxgemm_panel_column_sums(*cfg, kpad, panel.data(), sums);
        for (size_t j = 0; j < nc; ++j) {
          int64_t want = 0;
          for (size_t kk = 0; kk < k; ++kk) want += x[kk * nc + j];
          ASSERT_EQ(sums[j], want) << cfg->name << " k " << k << " column " << j << (saturated ? " all 255" : "");
        }
      }
    }
  }
}

TEST(Qu8WxGemm, FloatEpilogueWithRunTimeRowParams) {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const float guard = -12345.0f;
  for (const Qu8WxConfig* cfg : qu8_wxgemm_configs()) {
    for (size_t m : {1, 5, 8, 13}) {
      for (size_t n : {1, 3, 4, 7, 16, 18, 20, 31, 32, 45}) {
        for (size_t k : {1, 6, 64, 300}) {
          for (bool factors : {false, true}) {
            // No clamp, or a fused Clip's bounds inside the outputs' range.
            const float lo = factors ? -1.0f : -std::numeric_limits<float>::infinity();
            const float hi = factors ? 1.5f : std::numeric_limits<float>::infinity();
            const int32_t a = byte(rng);
            std::vector<int32_t> factor(m + cfg->mr, 0);
            if (factors)
              for (size_t i = 0; i < m; ++i) factor[i] = byte(rng) - 127;
            std::vector<uint8_t> x(k * n);
            for (uint8_t& v : x) v = static_cast<uint8_t>(byte(rng));
            std::vector<int8_t> w(m * k);
            for (int8_t& v : w) v = static_cast<int8_t>(byte(rng) - 128);
            std::vector<int32_t> bias_prime(m);
            std::vector<float> mult(m), row_bias(m + cfg->mr);
            for (size_t i = 0; i < m; ++i) {
              int64_t rowsum = 0;
              for (size_t kk = 0; kk < k; ++kk) rowsum += w[i * k + kk];
              bias_prime[i] = static_cast<int32_t>(-a * rowsum);
              mult[i] = std::ldexp(u(rng), -14);
              row_bias[i] = u(rng);
            }
            std::vector<uint8_t> packed_w(qu8_wxgemm_packed_w_size(*cfg, m, k));
            qu8_wxgemm_pack_w(*cfg, m, k, w.data(), nullptr, nullptr, 0, false, packed_w.data());
            qu8_wxgemm_set_row_params(*cfg, m, k, bias_prime.data(), mult.data(), packed_w.data());
            const size_t kpad = (k + 3) / 4 * 4, ldc = n + 3;
            std::vector<float> y(m * ldc, guard);
            std::vector<uint8_t> panel(kpad * cfg->nr);
            const size_t w_panel = qu8_wxgemm_packed_w_size(*cfg, cfg->mr, k);
            for (size_t j = 0; j < n; j += cfg->nr) {
              const size_t nc = std::min(cfg->nr, n - j);
              qu8_wxgemm_pack_x(*cfg, k, nc, x.data() + j, n, false, panel.data());
              int32_t sums[32];
              qu8_wxgemm_panel_column_sums(*cfg, kpad, panel.data(), sums);
              std::vector<int32_t> col_term(nc);
              for (size_t jj = 0; jj < nc; ++jj) col_term[jj] = sums[jj] - static_cast<int32_t>(k) * a;
              for (size_t i = 0; i < m; i += cfg->mr) {
                Qu8GemmRequant rq;
                rq.f32_out = true;
                rq.lo = lo, rq.hi = hi;
                rq.row_bias = row_bias.data() + i;
                if (factors) rq.row_factor = factor.data() + i, rq.col_term = col_term.data();
                cfg->ukernel(std::min(cfg->mr, m - i), nc, kpad, packed_w.data() + i / cfg->mr * w_panel, panel.data(),
                             reinterpret_cast<uint8_t*>(y.data() + i * ldc + j), ldc, rq);
              }
            }
            for (size_t i = 0; i < m; ++i) {
              for (size_t j = 0; j < ldc; ++j) {
                const float got = y[i * ldc + j];
                if (j >= n) {
                  ASSERT_EQ(got, guard) << cfg->name << " write outside C at " << i << "," << j;
                  continue;
                }
                int64_t acc = 0;
                for (size_t kk = 0; kk < k; ++kk) acc += (int64_t{x[kk * n + j]} - a) * (w[i * k + kk] + factor[i]);
                volatile float product = static_cast<float>(static_cast<int32_t>(acc)) * mult[i];
                const float want = std::min(hi, std::max(lo, product + row_bias[i]));
                ASSERT_EQ(got, want) << cfg->name << " M=" << m << " N=" << n << " K=" << k << " factors " << factors
                                     << " at " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

// qu8_wxgemm_pack_x_runs against the packed X layout of qu8_wxgemm.h, written out here: a
// gathered X (row kk at base + row_offset[kk], column j at its run's src + (j - col)) packed as
// x8[(g*NR + j)*4 + t] = X[g*4 + t][j] (sign bit flipped for s8), zero for j >= cols and
// k >= K. Runs of every length 1..NR (shorter and longer than the 16-column chunks, ending at NR,
// several per panel), K tails, both signs; guard bytes after the panel catch writes past it.
TEST(Qu8WxGemm, PackXRuns) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Qu8WxConfig* cfg : qu8_wxgemm_configs()) {
    const size_t nr = cfg->nr;
    for (size_t k : {1, 3, 4, 5, 8, 27, 36}) {
      for (int xs = 0; xs < 2; ++xs) {
        for (int trial = 0; trial < 60; ++trial) {
          const size_t cols = trial < 32 ? trial % nr + 1 : 1 + static_cast<size_t>(byte(rng)) % nr;
          // Split [0, cols) into runs: one run, runs of a fixed length, or random lengths.
          std::vector<Qu8WxRun> runs;
          for (size_t j = 0; j < cols;) {
            size_t len = cols - j;
            if (trial % 3 == 1) len = std::min(len, size_t{1} + trial % 17);
            if (trial % 3 == 2) len = std::min(len, size_t{1} + static_cast<size_t>(byte(rng)) % 20);
            runs.push_back({static_cast<uint32_t>(j), static_cast<uint32_t>(byte(rng) % 50 + j * 3),
                            static_cast<uint32_t>(len)});
            j += len;
          }
          const size_t row_span = 50 + cols * 3 + nr + 16;  // every src + len (+ 15-byte overshoot)
          std::vector<size_t> row_offset(k);
          for (size_t kk = 0; kk < k; ++kk) row_offset[kk] = static_cast<size_t>(byte(rng) % 7) * row_span + kk % 3;
          std::vector<uint8_t> base(8 * row_span + 64);
          for (uint8_t& v : base) v = static_cast<uint8_t>(byte(rng));
          const size_t kpad = (k + 3) / 4 * 4;
          std::vector<uint8_t> got(kpad * nr + 64, kGuard);
          qu8_wxgemm_pack_x_runs(*cfg, k, cols, base.data(), row_offset.data(), runs.data(), runs.size(), xs != 0,
                                 got.data());
          std::vector<uint8_t> want(kpad * nr + 64, kGuard);
          for (size_t kk = 0; kk < kpad; ++kk) {
            for (size_t j = 0; j < nr; ++j) {
              uint8_t v = 0;
              if (kk < k && j < cols) {
                for (const Qu8WxRun& r : runs)
                  if (j >= r.col && j < r.col + r.len) v = base[row_offset[kk] + r.src + (j - r.col)];
                v = static_cast<uint8_t>(v ^ (xs ? 0x80 : 0));
              }
              want[(kk / 4 * nr + j) * 4 + kk % 4] = v;
            }
          }
          ASSERT_EQ(got, want) << cfg->name << " K=" << k << " cols=" << cols << " runs=" << runs.size()
                               << " x_signed=" << xs;
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
