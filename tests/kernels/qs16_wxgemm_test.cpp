// The W * X 16-bit-activation GEMM (src/kernels/qs16-gemm/qs16_wxgemm.h) against the definition:
// an int64 accumulator of W * (X - x_zp) + bias per row, requantized by
// nfuse::requantize_value<int16_t / uint16_t> with the row's multiplier. Bit-exact, every
// configuration this CPU runs (scalar always), over every mr x nc edge of the 8x32 tile, K tails
// (odd K, K = 1), i16 / u16 activations and outputs, zero points at both ends, operands at the
// 16-bit extremes over a K long enough that the sums leave int32 (the chunked int64 path) and
// weights small enough that they do not (the one-pass int32 path), big biases and exact .5
// ties. X panels are packed both plainly and from gathered runs; guard elements catch writes
// outside the tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qs16-gemm/qs16_wxgemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

constexpr uint16_t kGuard = 0xA5A5;

struct WxCase {
  size_t m = 8, n = 32, k = 16;
  bool x_unsigned = false, c_unsigned = false;
  int32_t x_zp = 0, c_zp = 0;
  int fill =
      0;  // 0 random, 1 extreme (x at its far end, w alternating +-127/-128), 2 small (+-3 around x_zp), 3 tiny w
  int mult = 0;  // 0 spread, 1 tiny, 2 huge, 3 halves (exact .5 ties with small values)
  bool big_bias = false;
  bool runs = false;  // pack X from gathered runs (qs16_wxgemm_pack_x_runs)
};

std::string describe(const Qs16WxConfig& cfg, const WxCase& c) {
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s M=%zu N=%zu K=%zu x_u=%d c_u=%d x_zp=%d c_zp=%d fill=%d mult=%d bias=%d runs=%d",
                cfg.name, c.m, c.n, c.k, c.x_unsigned, c.c_unsigned, c.x_zp, c.c_zp, c.fill, c.mult, c.big_bias,
                c.runs);
  return buf;
}

int64_t x_value(uint16_t bits, bool x_unsigned) {
  return x_unsigned ? int64_t{bits} : int64_t{static_cast<int16_t>(bits)};
}

void check(const Qs16WxConfig& cfg, const WxCase& c, std::mt19937& rng) {
  std::uniform_int_distribution<int> any16(0, 65535), delta(-3, 3), byte(-128, 127), tiny(-2, 2);
  const int32_t x_lo = c.x_unsigned ? 0 : -32768, x_hi = x_lo + 65535;
  std::vector<uint16_t> x(c.k * c.n + cfg.nr);  // [K x N] row-major, bits of i16 or u16; the packer's slack
  for (uint16_t& v : x) {
    int32_t val = x_lo + any16(rng);
    if (c.fill == 1) val = c.x_zp - x_lo >= x_hi - c.x_zp ? x_lo : x_hi;  // farthest from the zero point
    if (c.fill == 2) val = std::min(x_hi, std::max(x_lo, c.x_zp + delta(rng)));
    v = static_cast<uint16_t>(val);
  }
  std::vector<int8_t> w(c.m * c.k);
  for (size_t i = 0; i < w.size(); ++i) {
    const size_t row = i / c.k;
    w[i] = static_cast<int8_t>(c.fill == 1 ? (row % 2 == 0 ? -128 : 127) : c.fill == 3 ? tiny(rng) : byte(rng));
  }
  std::vector<int32_t> bias(c.m);
  std::uniform_int_distribution<int32_t> small_bias(-200000, 200000), big(-(1 << 30), 1 << 30);
  for (int32_t& b : bias) b = c.big_bias ? big(rng) : (c.fill == 2 ? small_bias(rng) % 51 : small_bias(rng));
  std::vector<float> mult(c.m);
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  const float spread = 8000.0f / (128.0f * 32768.0f * std::sqrt(static_cast<float>(c.k)));
  for (float& v : mult)
    v = c.mult == 0 ? spread * u(rng) : c.mult == 1 ? 1e-15f * u(rng) : c.mult == 2 ? 1e6f * u(rng) : 0.5f;

  std::vector<uint8_t> packed_w(qs16_wxgemm_packed_w_size(cfg, c.m, c.k));
  qs16_wxgemm_pack_w(cfg, c.m, c.k, w.data(), bias.data(), mult.data(), c.x_zp, c.x_unsigned, packed_w.data());
  const size_t kpad = (c.k + 1) / 2 * 2, ldc = c.n + 3;
  std::vector<uint16_t> out(c.m * ldc, kGuard);
  std::vector<int16_t> panel(kpad * cfg.nr);
  const size_t w_panel = qs16_wxgemm_packed_w_size(cfg, cfg.mr, c.k);
  const Qs16GemmRequant rq =
      qs16_requant(c.c_unsigned, c.c_zp, c.c_unsigned ? 0 : -32768, c.c_unsigned ? 65535 : 32767);
  std::vector<size_t> offsets(c.k);
  for (size_t kk = 0; kk < c.k; ++kk) offsets[kk] = kk * c.n;
  for (size_t j = 0; j < c.n; j += cfg.nr) {
    const size_t nc = std::min(cfg.nr, c.n - j);
    std::fill(panel.begin(), panel.end(), static_cast<int16_t>(kGuard));  // the pack writes every element
    if (c.runs) {  // runs of 1, 2, 3, ... columns: every split point of the masked loads
      Qs16WxRun runs[32];
      size_t count = 0;
      for (size_t col = 0, len = 1; col < nc; col += len, ++len) {
        runs[count++] = {static_cast<uint32_t>(col), static_cast<uint32_t>(j + col),
                         static_cast<uint32_t>(std::min(len, nc - col))};
      }
      qs16_wxgemm_pack_x_runs(cfg, c.k, nc, x.data(), offsets.data(), runs, count, c.x_unsigned, panel.data());
    } else {
      qs16_wxgemm_pack_x(cfg, c.k, nc, x.data() + j, c.n, c.x_unsigned, panel.data());
    }
    for (size_t i = 0; i < kpad * cfg.nr; ++i) {  // padding columns and K rows are zero
      size_t column = 0;                          // the column of the panel slot i / 2 % NR holds
      while (qs16_wxgemm_x_slot(cfg, column) != i / 2 % cfg.nr) ++column;
      if (column >= nc || i / (2 * cfg.nr) * 2 + i % 2 >= c.k) {
        ASSERT_EQ(panel[i], 0) << describe(cfg, c) << " panel element " << i;
      }
    }
    for (size_t i = 0; i < c.m; i += cfg.mr) {
      cfg.ukernel(std::min(cfg.mr, c.m - i), nc, kpad, packed_w.data() + i / cfg.mr * w_panel, panel.data(),
                  out.data() + i * ldc + j, ldc, rq);
    }
  }
  for (size_t i = 0; i < c.m; ++i) {
    for (size_t j = 0; j < ldc; ++j) {
      const uint16_t got = out[i * ldc + j];
      if (j >= c.n) {
        ASSERT_EQ(got, kGuard) << describe(cfg, c) << " write outside C at " << i << "," << j;
        continue;
      }
      int64_t acc = bias[i];
      for (size_t kk = 0; kk < c.k; ++kk) acc += (x_value(x[kk * c.n + j], c.x_unsigned) - c.x_zp) * w[i * c.k + kk];
      const int32_t q = c.c_unsigned ? nfuse::requantize_value<uint16_t>(acc, mult[i], c.c_zp)
                                     : nfuse::requantize_value<int16_t>(acc, mult[i], c.c_zp);
      ASSERT_EQ(got, static_cast<uint16_t>(q)) << describe(cfg, c) << " at " << i << "," << j << " acc " << acc;
    }
  }
}

TEST(Qs16WxGemm, EveryConfigIsListed) {
  const auto cfgs = qs16_wxgemm_configs();
  ASSERT_FALSE(cfgs.empty());
  EXPECT_EQ(qs16_wxgemm_config(Isa::kScalar), cfgs[0]);
  for (const Qs16WxConfig* cfg : cfgs) EXPECT_EQ(qs16_wxgemm_config(cfg->isa), cfg) << cfg->name;
  EXPECT_EQ(qs16_wxgemm_config(Isa::kAvx2Fma), nullptr);  // AVX2 keeps the X * W family
}

TEST(Qs16WxGemm, TileEdgesAndKTails) {
  std::mt19937 rng(20261205);
  for (const Qs16WxConfig* cfg : qs16_wxgemm_configs()) {
    for (size_t m : {1, 3, 7, 8, 9, 16, 23}) {
      for (size_t n : {1, 2, 15, 16, 17, 31, 32, 33, 64, 70}) {
        for (size_t k : {1, 2, 3, 5, 16, 27, 64}) {
          WxCase c;
          c.m = m, c.n = n, c.k = k;
          c.x_zp = static_cast<int32_t>((m * 3100 + n * 700 + k) % 65536) - 32768;
          c.c_zp = static_cast<int32_t>((m * 1300 + n + k * 500) % 65536) - 32768;
          c.runs = (m + n + k) % 2 == 0;
          check(*cfg, c, rng);
        }
      }
    }
  }
}

TEST(Qs16WxGemm, SignsZeroPointsExtremesAndAccumulatorWidth) {
  std::mt19937 rng(5);
  for (const Qs16WxConfig* cfg : qs16_wxgemm_configs()) {
    for (int xu = 0; xu < 2; ++xu) {
      for (int cu = 0; cu < 2; ++cu) {
        for (int fill = 0; fill < 4; ++fill) {
          for (int mult = 0; mult < 4; ++mult) {
            if (mult == 3 && fill != 2) continue;  // halves only tie with small accumulators
            for (int32_t zp : {-32768, 0, 32767, 65535}) {
              WxCase c;
              // fill 1: K = 1155 same-sign extreme products (~1.2e9 per 256 K: int64 chunks);
              // fill 3: |w| <= 2 over K = 4001 (sum |w| < 65536: the one-pass int32 path).
              c.m = 13, c.n = 45, c.k = fill == 1 ? 1155 : fill == 3 ? 4001 : 37;
              c.x_unsigned = xu, c.c_unsigned = cu;
              c.x_zp = xu ? std::max(0, zp) : std::min(32767, zp);
              c.c_zp = cu ? std::max(0, 65535 - std::max(0, zp)) : std::max(-32768, std::min(32767, -zp / 2));
              c.fill = fill, c.mult = mult;
              c.big_bias = fill == 0 && mult == 0 && zp == 0;
              c.runs = (fill + mult) % 2 == 1;
              check(*cfg, c, rng);
            }
          }
        }
      }
    }
  }
}

// The accumulator width the pack chooses: one pass where every row's sum of |w| is <= 65535,
// K chunks of kQs16GemmKChunk otherwise (read back from the panel header).
TEST(Qs16WxGemm, ChunkLengthFollowsTheWeightBound) {
  const Qs16WxConfig& cfg = *qs16_wxgemm_config(Isa::kScalar);
  auto chunk_pairs = [&](size_t k, int8_t v) {
    std::vector<int8_t> w(8 * k, v);
    std::vector<uint8_t> packed(qs16_wxgemm_packed_w_size(cfg, 8, k));
    qs16_wxgemm_pack_w(cfg, 8, k, w.data(), nullptr, nullptr, 0, false, packed.data());
    uint32_t pairs;
    std::memcpy(&pairs, packed.data() + 8 * (sizeof(int64_t) + sizeof(float)), sizeof pairs);
    return pairs;
  };
  EXPECT_EQ(chunk_pairs(516, 127), 258u);                  // 516 * 127 = 65532
  EXPECT_EQ(chunk_pairs(517, 127), kQs16GemmKChunk / 2);   // 65659
  EXPECT_EQ(chunk_pairs(4000, -16), 2000u);                // 64000
  EXPECT_EQ(chunk_pairs(4097, -16), kQs16GemmKChunk / 2);  // 65552
}

// Packing many panels K pair by K pair (qs16_wxgemm_pack_x_panels) gives each panel exactly
// what qs16_wxgemm_pack_x_runs gives it alone: full single runs (the plain-load path), runs
// split inside a panel, partial panels, odd K, i16 and u16; and the column slots of every
// configuration are a permutation of 0..NR-1.
TEST(Qs16WxGemm, PackPanelsEqualsPackRuns) {
  std::mt19937 rng(20261206);
  std::uniform_int_distribution<int> any16(0, 65535);
  for (const Qs16WxConfig* cfg : qs16_wxgemm_configs()) {
    std::vector<bool> seen(cfg->nr, false);
    for (size_t j = 0; j < cfg->nr; ++j) {
      const size_t slot = qs16_wxgemm_x_slot(*cfg, j);
      ASSERT_LT(slot, cfg->nr) << cfg->name;
      EXPECT_FALSE(seen[slot]) << cfg->name << " slot " << slot;
      seen[slot] = true;
    }
    for (size_t k : {size_t{1}, size_t{7}, size_t{40}}) {
      for (const bool x_unsigned : {false, true}) {
        const size_t width = 300;
        std::vector<uint16_t> x(k * width + 64);
        for (uint16_t& v : x) v = static_cast<uint16_t>(any16(rng));
        std::vector<size_t> offsets(k);
        for (size_t kk = 0; kk < k; ++kk) offsets[kk] = kk * width;
        // Panels: full runs at several starts, then split and partial ones.
        std::vector<std::vector<Qs16WxRun>> runs = {{{0, 0, 32}},
                                                    {{0, 37, 32}},
                                                    {{0, 5, 10}, {10, 100, 22}},
                                                    {{0, 200, 3}, {3, 7, 1}, {4, 150, 13}},
                                                    {{0, 250, 17}}};
        const size_t kp = (k + 1) / 2 * 2;
        std::vector<int16_t> alone(runs.size() * kp * cfg->nr, 0), together(runs.size() * kp * cfg->nr, 1);
        std::vector<Qs16WxPanel> panels;
        for (size_t i = 0; i < runs.size(); ++i) {
          size_t cols = 0;
          for (const auto& r : runs[i]) cols = std::max<size_t>(cols, r.col + r.len);
          qs16_wxgemm_pack_x_runs(*cfg, k, cols, x.data(), offsets.data(), runs[i].data(), runs[i].size(), x_unsigned,
                                  alone.data() + i * kp * cfg->nr);
          panels.push_back({cols, runs[i].data(), runs[i].size(), together.data() + i * kp * cfg->nr});
        }
        qs16_wxgemm_pack_x_panels(*cfg, k, panels.data(), panels.size(), x.data(), offsets.data(), x_unsigned);
        EXPECT_EQ(alone, together) << cfg->name << " K=" << k << " x_u=" << x_unsigned;
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
