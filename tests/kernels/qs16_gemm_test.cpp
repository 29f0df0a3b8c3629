// 16-bit-activation GEMM kernel family (src/kernels/qs16-gemm) against the definition: an int64
// accumulator of (A - a_zp) * B + bias requantized by nfuse::requantize_value<int16_t / uint16_t>
// (kernels/quant_arithmetic.h) and clamped to [qmin, qmax]. Bit-exact, every configuration this CPU runs:
// tile-edge shapes, NCHW (column-major) A, s16/u16 activations and outputs, and K long enough
// that extreme values (A = -32768 / 32767, B = -128 / 127) overflow a naive int32 accumulator
// (the K-chunked widening must keep the exact integer). Guard elements catch writes outside C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qs16-gemm/qs16_gemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr uint16_t kGuard = 0xA5A5;
constexpr size_t kGuardCount = 37;

enum class Fill { kRandom, kMax, kMin, kAlternate };

struct Case {
  size_t m = 1, n = 1, k = 1;
  bool a_col_major = false;
  bool a_unsigned = false, c_unsigned = false;
  int32_t a_zp = 0, c_zp = 0;
  int32_t qmin = -32768, qmax = 32767;
  Fill a_fill = Fill::kRandom, b_fill = Fill::kRandom;
  bool bias = true;
  bool wide_mult = false;  // multipliers that map |acc| up to K * 2^22 into the int16 range
  size_t threads = 1;
};

std::string describe(const Qs16GemmConfig& cfg, const Case& c) {
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s seed=%u M=%zu N=%zu K=%zu a_cm=%d a_u=%d c_u=%d a_zp=%d c_zp=%d q=[%d,%d] "
                "a_fill=%d b_fill=%d threads=%zu", cfg.name, kSeed, c.m, c.n, c.k, c.a_col_major, c.a_unsigned,
                c.c_unsigned, c.a_zp, c.c_zp, c.qmin, c.qmax, static_cast<int>(c.a_fill),
                static_cast<int>(c.b_fill), c.threads);
  return buf;
}

void run_case(const Qs16GemmConfig& cfg, const Case& c) {
  std::mt19937 rng(kSeed + static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k));
  std::uniform_int_distribution<int> u16(0, 65535), s8(-128, 127);
  const uint16_t a_max = c.a_unsigned ? 0xFFFF : 0x7FFF, a_min = c.a_unsigned ? 0 : 0x8000;
  std::vector<uint16_t> a(c.m * c.k);
  for (uint16_t& v : a) {
    v = c.a_fill == Fill::kMax ? a_max : c.a_fill == Fill::kMin ? a_min : static_cast<uint16_t>(u16(rng));
  }
  std::vector<int8_t> b(c.k * c.n);  // [K][N]
  for (size_t kk = 0; kk < c.k; ++kk) {
    for (size_t j = 0; j < c.n; ++j) {
      int v = s8(rng);
      if (c.b_fill == Fill::kMax) v = 127;
      if (c.b_fill == Fill::kMin) v = -128;
      if (c.b_fill == Fill::kAlternate) v = j % 2 == 0 ? 127 : -128;
      b[kk * c.n + j] = static_cast<int8_t>(v);
    }
  }
  std::vector<int32_t> bias(c.n);
  std::uniform_int_distribution<int32_t> bd(-(1 << 30), 1 << 30);
  for (int32_t& v : bias) v = c.bias ? bd(rng) : 0;
  // Typical |acc| ~ 32768 * 128 * sqrt(K) / 3 spread over the int16 range.
  // wide_mult: |acc| up to K * 2^22 (extreme fills) lands inside the int16 range, unsaturated.
  const float spread = c.wide_mult ? 2e4f / (static_cast<float>(c.k) * 32768.0f * 128.0f)
                                   : 3e4f / (32768.0f * 128.0f * std::sqrt(static_cast<float>(c.k)));
  std::uniform_real_distribution<float> ud(0.5f, 2.0f);
  std::vector<float> mult(c.n);
  for (size_t j = 0; j < c.n; ++j) mult[j] = j % 7 == 3 && !c.wide_mult ? 0.5f : spread * ud(rng);

  std::vector<uint8_t> packed(qs16_gemm_packed_b_size(cfg, c.k, c.n));
  qs16_gemm_pack_b(cfg, c.k, c.n, b.data(), c.n, 1, bias.data(), mult.data(), c.a_zp, c.a_unsigned, packed.data());
  std::vector<uint16_t> a_layout = a;  // row-major [M][K], or [K][M] when column-major
  if (c.a_col_major) {
    for (size_t i = 0; i < c.m; ++i)
      for (size_t kk = 0; kk < c.k; ++kk) a_layout[kk * c.m + i] = a[i * c.k + kk];
  }
  std::vector<uint16_t> out(c.m * c.n + kGuardCount, kGuard);
  Qs16GemmArgs args;
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.a = a_layout.data();
  args.a_row_stride = c.a_col_major ? 1 : c.k;
  args.a_col_stride = c.a_col_major ? c.m : 1;
  args.a_unsigned = c.a_unsigned;
  args.b_packed = packed.data();
  args.c = out.data(), args.c_stride = c.n;
  args.c_unsigned = c.c_unsigned, args.c_zero_point = c.c_zp, args.qmin = c.qmin, args.qmax = c.qmax;
  const GemmTasks tasks = qs16_gemm_tasks(cfg, c.m, c.n, c.k, c.threads);
  std::vector<uint8_t> ws(qs16_gemm_workspace_size(cfg, c.k));
  for (size_t t = 0; t < tasks.count(); ++t) qs16_gemm_task(cfg, args, tasks, t, ws.data());

  const std::string what = describe(cfg, c);
  for (size_t i = 0; i < c.m; ++i) {
    for (size_t j = 0; j < c.n; ++j) {
      int64_t acc = bias[j];
      for (size_t kk = 0; kk < c.k; ++kk) {
        const int64_t av = c.a_unsigned ? a[i * c.k + kk] : static_cast<int16_t>(a[i * c.k + kk]);
        acc += (av - c.a_zp) * b[kk * c.n + j];
      }
      int64_t want = c.c_unsigned ? int64_t{nfuse::requantize_value<uint16_t>(acc, mult[j], c.c_zp)}
                                  : int64_t{nfuse::requantize_value<int16_t>(acc, mult[j], c.c_zp)};
      want = want < c.qmin ? c.qmin : want > c.qmax ? c.qmax : want;
      const uint16_t bits = out[i * c.n + j];
      const int64_t got = c.c_unsigned ? bits : static_cast<int16_t>(bits);
      ASSERT_EQ(got, want) << what << " at (" << i << ", " << j << ") acc=" << acc;
    }
  }
  for (size_t g = 0; g < kGuardCount; ++g) ASSERT_EQ(out[c.m * c.n + g], kGuard) << what << " guard " << g;
}

TEST(Qs16Gemm, EveryConfigIsListed) {
  const auto cfgs = qs16_gemm_configs();
  ASSERT_FALSE(cfgs.empty());
  EXPECT_EQ(qs16_gemm_config(Isa::kScalar), cfgs[0]);
  for (const Qs16GemmConfig* cfg : cfgs) std::printf("qs16_gemm config %s\n", cfg->name);
}

TEST(Qs16Gemm, TileEdgeShapes) {
  for (const Qs16GemmConfig* cfg : qs16_gemm_configs()) {
    const size_t mr = cfg->mr, nr = cfg->nr;
    for (size_t m : {size_t{1}, mr - 1 > 0 ? mr - 1 : 1, mr, mr + 1, 2 * mr + 3})
      for (size_t n : {size_t{1}, nr - 1, nr, nr + 1, 2 * nr + 5})
        for (size_t k : {size_t{1}, size_t{2}, size_t{3}, size_t{17}, size_t{64}, size_t{257}}) {
          Case c;
          c.m = m, c.n = n, c.k = k;
          c.a_zp = 123;
          c.c_zp = -77;
          run_case(*cfg, c);
        }
  }
}

TEST(Qs16Gemm, SignednessZeroPointsLayoutsAndClamps) {
  for (const Qs16GemmConfig* cfg : qs16_gemm_configs()) {
    for (int variant = 0; variant < 8; ++variant) {
      Case c;
      c.m = 37, c.n = 45, c.k = 300;
      c.a_unsigned = variant & 1;
      c.c_unsigned = variant & 2;
      c.a_col_major = variant & 4;
      c.a_zp = c.a_unsigned ? 40000 : -1234;
      c.c_zp = c.c_unsigned ? 32768 : 100;
      c.qmin = c.c_unsigned ? 1000 : -20000;
      c.qmax = c.c_unsigned ? 60000 : 20000;
      c.bias = variant != 3;
      run_case(*cfg, c);
    }
  }
}

// K = 4096 of -32768 x -128 gives acc = 2^34 (+ bias): a plain int32 accumulator would wrap after
// 512 products. Also K values across the 256-element chunk boundary.
TEST(Qs16Gemm, ExtremeValuesOverflowInt32) {
  for (const Qs16GemmConfig* cfg : qs16_gemm_configs()) {
    for (size_t k : {size_t{255}, size_t{256}, size_t{257}, size_t{511}, size_t{512}, size_t{513}, size_t{4096}}) {
      for (Fill af : {Fill::kMax, Fill::kMin})
        for (Fill bf : {Fill::kMax, Fill::kMin, Fill::kAlternate})
          for (bool a_unsigned : {false, true}) {
            Case c;
            c.m = cfg->mr + 1, c.n = cfg->nr + 3, c.k = k;
            c.a_fill = af, c.b_fill = bf, c.a_unsigned = a_unsigned;
            c.a_zp = a_unsigned ? 0 : 0;
            c.wide_mult = true;
            c.bias = false;
            run_case(*cfg, c);
          }
    }
  }
}

TEST(Qs16Gemm, LargeRandomWithThreads) {
  for (const Qs16GemmConfig* cfg : qs16_gemm_configs()) {
    Case c;
    c.m = 203, c.n = 131, c.k = 1153;
    c.a_zp = 5;
    c.threads = 5;
    run_case(*cfg, c);
  }
}

}  // namespace
}  // namespace nfuse::kernels
