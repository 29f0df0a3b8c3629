// Quantized GEMM kernel family (src/kernels/qu8-gemm) against the definition: an int64
// accumulator of (A - a_zp) * B + bias, requantized by nfuse::requantize_value (kernels/quant_arithmetic.h,
// the one statement of nfuse's integer arithmetic) and clamped to [qmin, qmax]. Equality is
// bit-exact, never a tolerance. Every configuration this CPU runs (scalar always): each
// microkernel directly over every mr x nc edge, the driver over tile-derived shapes, A layouts and
// strides, u8/s8 activations and outputs, int32 output, extreme values (the vpmaddubsw saturation
// trap: 255 x 127 pairs over a long K), multipliers tiny / huge / per channel / exact ties, bias
// extremes, clamps, and task splits equal to one task. Guard bytes catch writes outside C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_gemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr uint8_t kGuard = 0xA5;
constexpr size_t kGuardCount = 71;

enum class Fill { kRandom, kMax, kMin, kAlternate };

struct Case {
  size_t m = 1, n = 1, k = 1;
  bool a_col_major = false;  // A[i][kk] at a[kk*lda + i] (NCHW) instead of a[i*lda + kk]
  size_t a_pad = 0;
  size_t c_pad = 0;
  bool b_transposed = false;  // B source [N][K] (conv weights) instead of [K][N]
  bool a_signed = false, c_signed = false;
  int32_t a_zp = 0;
  int32_t c_zp = 0;
  int32_t qmin = 0, qmax = 255;  // in C's type
  bool int32_out = false;
  Fill a_fill = Fill::kRandom;   // kMax: 255 (u8) / 127 (s8); kMin: 0 / -128
  Fill b_fill = Fill::kRandom;   // kMax: 127, kMin: -128, kAlternate: 127 / -128 by column
  enum { kNoBias, kRandomBias, kBigBias } bias = kRandomBias;
  enum { kSpread, kTiny, kHuge, kPerChannelMixed, kHalf } mult = kSpread;
  bool small_values = false;  // A within +-2 of a_zp, bias within +-50: unsaturated, many .5 ties
  size_t threads = 1;
};

std::string describe(const Qu8GemmConfig& cfg, const Case& c) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s seed=%u M=%zu N=%zu K=%zu a_cm=%d a_pad=%zu c_pad=%zu b_t=%d a_s=%d c_s=%d a_zp=%d c_zp=%d "
                "q=[%d,%d] i32=%d a_fill=%d b_fill=%d bias=%d mult=%d small=%d threads=%zu",
                cfg.name, kSeed, c.m, c.n, c.k, c.a_col_major, c.a_pad, c.c_pad, c.b_transposed, c.a_signed,
                c.c_signed, c.a_zp, c.c_zp, c.qmin, c.qmax, c.int32_out, static_cast<int>(c.a_fill),
                static_cast<int>(c.b_fill), static_cast<int>(c.bias), static_cast<int>(c.mult), c.small_values,
                c.threads);
  return buf;
}

struct Data {
  std::vector<uint8_t> a;  // bits of u8 or s8
  size_t lda = 0;
  std::vector<int8_t> b;   // [K][N], or [N][K] when b_transposed
  std::vector<int32_t> bias;
  std::vector<float> mult;
};

Data make_data(const Case& c, std::mt19937& rng) {
  Data d;
  d.lda = (c.a_col_major ? c.m : c.k) + c.a_pad;
  const size_t a_size = (c.a_col_major ? c.k : c.m) * d.lda + 1;
  d.a.resize(a_size);
  std::uniform_int_distribution<int> byte(0, 255);
  const uint8_t a_max = c.a_signed ? 0x7F : 0xFF;
  const uint8_t a_min = c.a_signed ? 0x80 : 0x00;
  std::uniform_int_distribution<int> delta(-2, 2);
  for (uint8_t& v : d.a) {
    v = c.a_fill == Fill::kMax ? a_max : c.a_fill == Fill::kMin ? a_min : static_cast<uint8_t>(byte(rng));
    if (c.small_values) {
      const int lo = c.a_signed ? -128 : 0;
      int x = c.a_zp + delta(rng);
      x = x < lo ? lo : (x > lo + 255 ? lo + 255 : x);
      v = static_cast<uint8_t>(x);
    }
  }
  d.b.resize(c.k * c.n + 1);
  for (size_t kk = 0; kk < c.k; ++kk) {
    for (size_t j = 0; j < c.n; ++j) {
      int v = byte(rng) - 128;
      if (c.b_fill == Fill::kMax) v = 127;
      if (c.b_fill == Fill::kMin) v = -128;
      if (c.b_fill == Fill::kAlternate) v = j % 2 == 0 ? 127 : -128;
      d.b[c.b_transposed ? j * c.k + kk : kk * c.n + j] = static_cast<int8_t>(v);
    }
  }
  d.bias.resize(c.n);
  std::uniform_int_distribution<int32_t> small_bias(-20000, 20000);
  std::uniform_int_distribution<int32_t> big_bias(-(1 << 30), 1 << 30);
  for (int32_t& v : d.bias) {
    v = c.bias == Case::kBigBias ? big_bias(rng) : small_bias(rng);
    if (c.small_values) v = v % 51;
  }
  // Multipliers that spread typical accumulators (|acc| ~ 128*128*sqrt(K)/3) over the u8 range.
  const float spread = 40.0f / (128.0f * 128.0f * std::sqrt(static_cast<float>(c.k > 0 ? c.k : 1)));
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  d.mult.resize(c.n);
  for (size_t j = 0; j < c.n; ++j) {
    float v = spread * u(rng);
    switch (c.mult) {
      case Case::kSpread:
        break;
      case Case::kTiny:
        v = 1e-12f * u(rng);
        break;
      case Case::kHuge:
        v = 1e12f * u(rng);
        break;
      case Case::kPerChannelMixed: {
        static const float kMixed[] = {1e-9f, 3e-6f, 1e-4f, 0.0123f, 0.5f, 1.0f, 7.5f, 3e5f, 1e20f};
        v = kMixed[j % (sizeof kMixed / sizeof kMixed[0])];
        break;
      }
      case Case::kHalf:
        v = j % 2 == 0 ? 0.5f : 0.25f;  // exact ties: acc * 0.5 = n + 0.5 for odd acc
        break;
    }
    d.mult[j] = v;
  }
  return d;
}

int32_t a_value(const Case& c, uint8_t bits) { return c.a_signed ? static_cast<int8_t>(bits) : bits; }

uint8_t a_at(const Case& c, const Data& d, size_t i, size_t kk) {
  return c.a_col_major ? d.a[kk * d.lda + i] : d.a[i * d.lda + kk];
}

int8_t b_at(const Case& c, const Data& d, size_t kk, size_t j) {
  return c.b_transposed ? d.b[j * c.k + kk] : d.b[kk * c.n + j];
}

int64_t reference_acc(const Case& c, const Data& d, size_t i, size_t j) {
  int64_t acc = c.bias == Case::kNoBias ? 0 : d.bias[j];
  for (size_t kk = 0; kk < c.k; ++kk) {
    acc += static_cast<int64_t>(a_value(c, a_at(c, d, i, kk)) - c.a_zp) * b_at(c, d, kk, j);
  }
  return acc;
}

// The definition: requantize_value in C's type, then the clamp; returned as C's bits.
uint8_t reference_q(const Case& c, int64_t acc, float mult) {
  int32_t q;
  if (c.c_signed) {
    q = nfuse::requantize_value<int8_t>(acc, mult, c.c_zp);
  } else {
    q = nfuse::requantize_value<uint8_t>(acc, mult, c.c_zp);
  }
  q = q < c.qmin ? c.qmin : (q > c.qmax ? c.qmax : q);
  return static_cast<uint8_t>(q);
}

// Runs the driver on `c` with `cfg` and compares every element (and the guards) to the definition.
void check_driver(const Qu8GemmConfig& cfg, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(describe(cfg, c));
  const Data d = make_data(c, rng);
  std::vector<uint8_t> packed(qu8_gemm_packed_b_size(cfg, c.k, c.n) + 1);
  const size_t b_k_stride = c.b_transposed ? 1 : c.n;
  const size_t b_n_stride = c.b_transposed ? c.k : 1;
  qu8_gemm_pack_b(cfg, c.k, c.n, d.b.data(), b_k_stride, b_n_stride, c.bias == Case::kNoBias ? nullptr : d.bias.data(),
                  d.mult.data(), c.a_zp, c.a_signed, packed.data());

  const size_t elem = c.int32_out ? 4 : 1;
  const size_t ldc = c.n + c.c_pad;
  std::vector<uint8_t> out(c.m * ldc * elem + kGuardCount, kGuard);
  Qu8GemmArgs args;
  args.m = c.m;
  args.n = c.n;
  args.k = c.k;
  args.a = d.a.data();
  args.a_row_stride = c.a_col_major ? 1 : d.lda;
  args.a_col_stride = c.a_col_major ? d.lda : 1;
  args.a_signed = c.a_signed;
  args.b_packed = packed.data();
  args.c = out.data();
  args.c_stride = ldc;
  args.c_signed = c.c_signed;
  args.c_zero_point = c.c_zp;
  args.qmin = c.qmin;
  args.qmax = c.qmax;
  args.int32_out = c.int32_out;
  std::vector<uint8_t> ws(qu8_gemm_workspace_size(cfg, c.k));
  const Qu8GemmTasks tasks = qu8_gemm_tasks(cfg, c.m, c.n, c.k, c.threads);
  if (c.threads > 1 && c.m * c.n * c.k >= (size_t{1} << 18)) {
    EXPECT_GT(tasks.count(), 1u);
  }
  for (size_t t = 0; t < tasks.count(); ++t) {
    qu8_gemm_task(cfg, args, tasks, t, ws.data());
  }

  size_t bad = 0;
  for (size_t i = 0; i < c.m; ++i) {
    for (size_t j = 0; j < c.n; ++j) {
      const int64_t acc = reference_acc(c, d, i, j);
      if (c.int32_out) {
        ASSERT_GE(acc, std::numeric_limits<int32_t>::min());
        ASSERT_LE(acc, std::numeric_limits<int32_t>::max());
        int32_t got;
        std::memcpy(&got, out.data() + (i * ldc + j) * 4, 4);
        if (got != acc && bad++ < 5) ADD_FAILURE() << "i=" << i << " j=" << j << " got " << got << " want " << acc;
      } else {
        const uint8_t want = reference_q(c, acc, d.mult[j]);
        const uint8_t got = out[i * ldc + j];
        if (got != want && bad++ < 5) {
          ADD_FAILURE() << "i=" << i << " j=" << j << " acc=" << acc << " mult=" << d.mult[j] << " got "
                        << int(got) << " want " << int(want);
        }
      }
    }
    for (size_t b = c.n * elem; b < ldc * elem; ++b) {
      ASSERT_EQ(out[i * ldc * elem + b], kGuard) << "write in row padding, row " << i;
    }
  }
  for (size_t g = 0; g < kGuardCount; ++g) {
    ASSERT_EQ(out[c.m * ldc * elem + g], kGuard) << "write past C";
  }
  EXPECT_EQ(bad, 0u);
}

class Qu8GemmTest : public ::testing::TestWithParam<const Qu8GemmConfig*> {};

std::string config_name(const ::testing::TestParamInfo<const Qu8GemmConfig*>& info) {
  return info.param->name;
}

// Microkernels called directly: every mr in [1, MR] (MR kernel and the 1-row partner), every nc in
// [1, NR], K around KR, both output modes; rows >= mr of the panel hold data that must not leak.
TEST_P(Qu8GemmTest, MicrokernelEdges) {
  const Qu8GemmConfig& cfg = *GetParam();
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const size_t k : {size_t{1}, cfg.kr - 1 > 0 ? cfg.kr - 1 : 2, cfg.kr, cfg.kr + 1, 4 * cfg.kr + 3, size_t{61}}) {
    for (const bool one : {false, true}) {
      const size_t MR = one ? 1 : cfg.mr;
      for (size_t mr = 1; mr <= MR; ++mr) {
        for (size_t nc = 1; nc <= cfg.nr; ++nc) {
          for (const bool i32 : {false, true}) {
            SCOPED_TRACE(std::string(cfg.name) + " k=" + std::to_string(k) + " MR=" + std::to_string(MR) +
                         " mr=" + std::to_string(mr) + " nc=" + std::to_string(nc) + " i32=" + std::to_string(i32));
            std::vector<uint8_t> a(MR * k);
            for (uint8_t& v : a) v = static_cast<uint8_t>(byte(rng));
            std::vector<int8_t> b(k * nc);
            for (int8_t& v : b) v = static_cast<int8_t>(byte(rng) - 128);
            std::vector<int32_t> bias(nc);
            std::vector<float> mult(nc);
            for (size_t j = 0; j < nc; ++j) {
              bias[j] = byte(rng) * 37 - 4000;
              mult[j] = (0.5f + byte(rng) / 255.0f) / (64.0f * static_cast<float>(k));
            }
            const int32_t a_zp = byte(rng);
            const int32_t c_zp = byte(rng);
            std::vector<uint8_t> packed_b(qu8_gemm_packed_b_size(cfg, k, nc));
            qu8_gemm_pack_b(cfg, k, nc, b.data(), nc, 1, bias.data(), mult.data(), a_zp, false, packed_b.data());
            const size_t kpad = (k + cfg.kr - 1) / cfg.kr * cfg.kr;
            std::vector<uint8_t> packed_a(MR * kpad * cfg.a_elem);
            qu8_gemm_pack_a(MR, cfg.kr, cfg.a_elem, MR, k, a.data(), k, 1, false, packed_a.data());
            const size_t elem = i32 ? 4 : 1;
            const size_t ldc = cfg.nr + 3;
            std::vector<uint8_t> out(MR * ldc * elem + kGuardCount, kGuard);
            Qu8GemmRequant rq;
            rq.int32_out = i32;
            rq.zero_point = c_zp;
            rq.lo = static_cast<float>(0 - c_zp);
            rq.hi = static_cast<float>(255 - c_zp);
            (one ? cfg.ukernel_1 : cfg.ukernel)(mr, nc, kpad, packed_a.data(), packed_b.data(), out.data(), ldc, rq);
            for (size_t r = 0; r < MR; ++r) {
              for (size_t j = 0; j < ldc * elem; ++j) {
                const uint8_t got = out[r * ldc * elem + j];
                if (r >= mr || j >= nc * elem) {
                  ASSERT_EQ(got, kGuard) << "write outside the tile at r=" << r << " byte " << j;
                  continue;
                }
                if (i32 && j % 4 != 0) continue;
                const size_t col = i32 ? j / 4 : j;
                int64_t acc = bias[col];
                for (size_t kk = 0; kk < k; ++kk) acc += int64_t{a[r * k + kk] - a_zp} * b[kk * nc + col];
                if (i32) {
                  int32_t v;
                  std::memcpy(&v, &out[r * ldc * elem + j], 4);
                  ASSERT_EQ(v, acc) << "r=" << r << " j=" << col;
                } else {
                  ASSERT_EQ(got, nfuse::requantize_value<uint8_t>(acc, mult[col], c_zp))
                      << "r=" << r << " j=" << col << " acc=" << acc;
                }
              }
            }
            for (size_t g = 0; g < kGuardCount; ++g) ASSERT_EQ(out[MR * ldc * elem + g], kGuard);
          }
        }
      }
    }
  }
}

// Driver shapes around MR, NR, KR: 1, T-1, T, T+1, 2T and primes; random zero points.
TEST_P(Qu8GemmTest, TileShapes) {
  const Qu8GemmConfig& cfg = *GetParam();
  std::mt19937 rng(kSeed + 1);
  auto around = [](size_t t, size_t prime) {
    std::vector<size_t> v{1, t > 1 ? t - 1 : 2, t, t + 1, 2 * t, prime};
    return v;
  };
  std::uniform_int_distribution<int32_t> zp(0, 255);
  for (size_t m : around(cfg.mr, 37)) {
    for (size_t n : around(cfg.nr, 67)) {
      for (size_t k : around(cfg.kr, 131)) {
        Case c;
        c.m = m;
        c.n = n;
        c.k = k;
        c.a_zp = zp(rng);
        c.c_zp = zp(rng);
        check_driver(cfg, c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Larger problems: several M blocks, N blocks, long K, A/B/C layouts and strides.
TEST_P(Qu8GemmTest, LayoutsAndLargeShapes) {
  const Qu8GemmConfig& cfg = *GetParam();
  std::mt19937 rng(kSeed + 2);
  const size_t shapes[][3] = {{197, 131, 257}, {61, 539, 1031}, {1031, 19, 73}, {3, 5, 4099},
                              {64, 64, 576}, {17, 257, 2304}};
  for (const auto& s : shapes) {
    for (int layout = 0; layout < 4; ++layout) {
      Case c;
      c.m = s[0];
      c.n = s[1];
      c.k = s[2];
      c.a_col_major = layout == 1;
      c.a_pad = layout >= 2 ? 13 : 0;
      c.c_pad = layout == 3 ? 7 : 0;
      c.b_transposed = layout % 2 == 1;
      c.a_zp = layout * 60 + 17;
      c.c_zp = 128 - layout * 30;
      check_driver(cfg, c, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// The vpmaddubsw trap and its neighbours: all-255 activations against all-127 / all-(-128) /
// alternating weights over long K, with a_zp 0, 128, 255; checked as int32 and requantized (the
// multiplier chosen so the result is neither saturated nor constant across zero points).
TEST_P(Qu8GemmTest, ExtremeValues) {
  const Qu8GemmConfig& cfg = *GetParam();
  std::mt19937 rng(kSeed + 3);
  for (const Fill af : {Fill::kMax, Fill::kMin, Fill::kRandom}) {
    for (const Fill bf : {Fill::kMax, Fill::kMin, Fill::kAlternate}) {
      for (const int32_t a_zp : {0, 128, 255}) {
        for (const bool i32 : {true, false}) {
          for (const size_t k : {size_t{1}, size_t{2}, size_t{4}, size_t{999}, size_t{8192}}) {
            Case c;
            c.m = cfg.mr + 3;
            c.n = cfg.nr + 5;
            c.k = k;
            c.a_fill = af;
            c.b_fill = bf;
            c.a_zp = a_zp;
            c.int32_out = i32;
            c.bias = Case::kNoBias;
            c.c_zp = 100;
            check_driver(cfg, c, rng);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
  // s8 activations at their extremes.
  for (const Fill af : {Fill::kMax, Fill::kMin}) {
    for (const int32_t a_zp : {-128, 0, 127}) {
      Case c;
      c.m = 2 * cfg.mr + 1;
      c.n = 2 * cfg.nr + 1;
      c.k = 5000;
      c.a_signed = true;
      c.a_fill = af;
      c.b_fill = Fill::kAlternate;
      c.a_zp = a_zp;
      c.int32_out = true;
      check_driver(cfg, c, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// Requantization edges: tiny multipliers (everything -> zero point), huge ones (saturation at both
// ends, beyond cvtps2dq's int32 range), per-channel mixes, exact .5 ties, big biases, clamps,
// zero points at the ends, s8 in and out.
TEST_P(Qu8GemmTest, Requantization) {
  const Qu8GemmConfig& cfg = *GetParam();
  std::mt19937 rng(kSeed + 4);
  const auto mults = {Case::kTiny, Case::kHuge, Case::kPerChannelMixed, Case::kHalf, Case::kSpread};
  for (const auto mult : mults) {
    for (const auto bias : {Case::kNoBias, Case::kRandomBias, Case::kBigBias}) {
      for (int variant = 0; variant < 6; ++variant) {
        Case c;
        c.m = 2 * cfg.mr + 3;
        c.n = 3 * cfg.nr - 1;
        c.k = mult == Case::kHalf ? 1 : 37;
        c.mult = mult;
        c.bias = bias;
        c.small_values = mult == Case::kHalf && bias != Case::kBigBias;
        c.a_zp = (variant * 97) % 256;
        switch (variant) {
          case 0:
            c.c_zp = 0;
            break;
          case 1:
            c.c_zp = 255;
            break;
          case 2:  // ReLU6-like clamp
            c.c_zp = 30;
            c.qmin = 30;
            c.qmax = 150;
            break;
          case 3:  // s8 in and out
            c.a_signed = c.c_signed = true;
            c.a_zp = -5;
            c.c_zp = -128;
            c.qmin = -128;
            c.qmax = 127;
            break;
          case 4:  // s8 out with a clamp, u8 in
            c.c_signed = true;
            c.c_zp = 3;
            c.qmin = -10;
            c.qmax = 90;
            break;
          case 5:  // s8 in, u8 out, single-value clamp
            c.a_signed = true;
            c.a_zp = 127;
            c.c_zp = 128;
            c.qmin = c.qmax = 77;
            break;
        }
        check_driver(cfg, c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The task split (as threads would run it) is identical to one task and to the definition.
TEST_P(Qu8GemmTest, TasksEqualSingleThread) {
  const Qu8GemmConfig& cfg = *GetParam();
  std::mt19937 rng(kSeed + 5);
  for (const size_t threads : {size_t{2}, size_t{3}, size_t{8}, size_t{16}}) {
    for (const bool i32 : {false, true}) {
      Case c;
      c.m = 211;
      c.n = 3 * cfg.nr + 7;
      c.k = 300;
      c.threads = threads;
      c.int32_out = i32;
      c.a_zp = 131;
      c.c_zp = 120;
      check_driver(cfg, c, rng);
      if (HasFatalFailure()) return;
    }
  }
  // Bytes of a multi-task run against a single-task run of the same data.
  const size_t m = 300, n = 2 * cfg.nr + 3, k = 129;
  std::vector<uint8_t> a(m * k);
  std::vector<int8_t> b(k * n);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : b) v = static_cast<int8_t>(byte(rng) - 128);
  std::vector<float> mult(n, 1.0f / 2048.0f);
  std::vector<uint8_t> packed(qu8_gemm_packed_b_size(cfg, k, n));
  qu8_gemm_pack_b(cfg, k, n, b.data(), n, 1, nullptr, mult.data(), 3, false, packed.data());
  std::vector<uint8_t> one(m * n), many(m * n);
  Qu8GemmArgs args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a.data();
  args.a_row_stride = k;
  args.b_packed = packed.data();
  args.c_stride = n;
  args.c_zero_point = 128;
  std::vector<uint8_t> ws(qu8_gemm_workspace_size(cfg, k));
  args.c = one.data();
  qu8_gemm(cfg, args, 0, m, 0, n, ws.data());
  args.c = many.data();
  const Qu8GemmTasks tasks = qu8_gemm_tasks(cfg, m, n, k, 7);
  EXPECT_GT(tasks.count(), 1u);
  for (size_t t = tasks.count(); t-- > 0;) {  // any order
    qu8_gemm_task(cfg, args, tasks, t, ws.data());
  }
  EXPECT_EQ(one, many);

  // Real threads, each with its own workspace, taking tasks round-robin.
  std::vector<uint8_t> threaded(m * n);
  args.c = threaded.data();
  constexpr size_t kThreads = 4;
  const Qu8GemmTasks tasks4 = qu8_gemm_tasks(cfg, m, n, k, kThreads);
  std::vector<std::thread> pool;
  for (size_t w = 0; w < kThreads; ++w) {
    pool.emplace_back([&, w] {
      std::vector<uint8_t> own(qu8_gemm_workspace_size(cfg, k));
      for (size_t t = w; t < tasks4.count(); t += kThreads) qu8_gemm_task(cfg, args, tasks4, t, own.data());
    });
  }
  for (std::thread& t : pool) t.join();
  EXPECT_EQ(one, threaded);
}

INSTANTIATE_TEST_SUITE_P(Configs, Qu8GemmTest, ::testing::ValuesIn(qu8_gemm_configs()), config_name);

TEST(Qu8GemmConfigTest, SelectionFollowsIsa) {
  EXPECT_EQ(qu8_gemm_config(Isa::kScalar)->isa, Isa::kScalar);
  for (const Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_supported(isa)) {
      EXPECT_EQ(qu8_gemm_config(isa), nullptr) << isa_name(isa);
      continue;
    }
    ScopedIsaOverride force(isa);
    ASSERT_NE(qu8_gemm_config(isa), nullptr) << isa_name(isa);
    EXPECT_EQ(&qu8_gemm_config(), qu8_gemm_config(isa)) << isa_name(isa);
  }
  const CpuFeatures& f = cpu_features();
  if (isa_supported(Isa::kAvx512) && f.x86_avx512vnni && f.x86_avx512bw && f.x86_avx512vl) {
    EXPECT_STREQ(qu8_gemm_config(Isa::kAvx512)->name, "avx512vnni_8x32c4");
  }
}

}  // namespace
}  // namespace nfuse::kernels
