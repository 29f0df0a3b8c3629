// FP32 Winograd F(4,3) transforms (src/kernels/f32-winograd) against a direct 3x3 convolution in
// double, on every ISA this machine runs: input transform -> 36 products summed over input
// channels (in double, so only the transforms' rounding is measured) -> output transform.
// Planes whose width and height are not multiples of the tile (1..17, 33), pads 0 and 1, tile
// rows split into segments at odd tile offsets (tx0 > 0), partial bottom rows, residual and
// clamp. Guard values around every output row catch writes outside the valid columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/f32-winograd/f32_winograd.h"
#include "support/tolerances_kernels.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr float kGuard = -7.75e33f;
constexpr size_t kGuardCols = 9;  // guard floats after each output row
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  size_t ci = 1, co = 1, h = 4, w = 4, pad = 1;
  size_t segment = 0;  // tiles per input/output transform call (0: the whole tile row)
  bool residual = false;
  float min = -kInf, max = kInf;
};

std::string describe(Isa isa, const Case& c) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "isa=%s seed=%u ci=%zu co=%zu %zux%zu pad=%zu segment=%zu%s min=%g max=%g",
                isa_name(isa), kSeed, c.ci, c.co, c.h, c.w, c.pad, c.segment, c.residual ? " residual" : "",
                static_cast<double>(c.min), static_cast<double>(c.max));
  return buf;
}

void run_case(Isa isa, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(describe(isa, c));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const size_t ho = c.h + 2 * c.pad - 2, wo = c.w + 2 * c.pad - 2;
  std::vector<float> x(c.ci * c.h * c.w), g(c.co * c.ci * 9), bias(c.co), res(c.co * ho * wo);
  for (float& v : x) v = dist(rng);
  for (float& v : g) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : res) v = dist(rng);

  // Transformed weights u[xi][co][ci].
  std::vector<float> u(36 * c.co * c.ci);
  for (size_t o = 0; o < c.co; ++o)
    for (size_t i = 0; i < c.ci; ++i) f32_wino43_weights(&g[(o * c.ci + i) * 9], &u[o * c.ci + i], c.co * c.ci);

  const F32Wino43Kernels k = f32_wino43_kernels(isa);
  const size_t tiles_y = (ho + 3) / 4, tiles_x = (wo + 3) / 4;
  const size_t seg = c.segment == 0 ? tiles_x : c.segment;
  const size_t out_stride = wo + kGuardCols;
  std::vector<float> y(c.co * ho * out_stride, kGuard);
  std::vector<float> v(36 * c.ci * seg), m(36 * c.co * seg);
  std::vector<float> ws_in(f32_wino43_input_workspace_floats(seg)), ws_out(f32_wino43_output_workspace_floats(seg));
  for (size_t ty = 0; ty < tiles_y; ++ty) {
    for (size_t tx0 = 0; tx0 < tiles_x; tx0 += seg) {
      const size_t count = std::min(seg, tiles_x - tx0);
      for (size_t i = 0; i < c.ci; ++i) {
        F32Wino43InputArgs a;
        for (size_t r = 0; r < 6; ++r) {
          const long long iy = static_cast<long long>(4 * ty + r) - static_cast<long long>(c.pad);
          a.rows[r] = iy >= 0 && iy < static_cast<long long>(c.h) ? &x[(i * c.h + static_cast<size_t>(iy)) * c.w] : nullptr;
        }
        a.width = c.w;
        a.pad_left = c.pad;
        a.tx0 = tx0;
        a.count = count;
        a.v = &v[i * seg];  // v[xi][ci][t]
        a.v_stride = c.ci * seg;
        a.workspace = ws_in.data();
        k.input(a);
      }
      for (size_t xi = 0; xi < 36; ++xi)
        for (size_t o = 0; o < c.co; ++o)
          for (size_t t = 0; t < count; ++t) {
            double s = 0.0;
            for (size_t i = 0; i < c.ci; ++i)
              s += static_cast<double>(u[(xi * c.co + o) * c.ci + i]) * v[(xi * c.ci + i) * seg + t];
            m[(xi * c.co + o) * seg + t] = static_cast<float>(s);
          }
      for (size_t o = 0; o < c.co; ++o) {
        F32Wino43OutputArgs a;
        a.m = &m[o * seg];
        a.m_stride = c.co * seg;
        a.tx0 = tx0;
        a.count = count;
        a.out_rows = std::min<size_t>(4, ho - 4 * ty);
        for (size_t r = 0; r < a.out_rows; ++r) {
          a.rows[r] = &y[(o * ho + 4 * ty + r) * out_stride];
          if (c.residual) a.residual_rows[r] = &res[(o * ho + 4 * ty + r) * wo];
        }
        a.width = wo;
        a.bias = bias[o];
        a.min = c.min;
        a.max = c.max;
        a.workspace = ws_out.data();
        k.output(a);
      }
    }
  }

  size_t bad = 0;
  for (size_t o = 0; o < c.co; ++o)
    for (size_t oy = 0; oy < ho; ++oy) {
      for (size_t ox = 0; ox < wo; ++ox) {
        double s = bias[o];
        for (size_t i = 0; i < c.ci; ++i)
          for (size_t ky = 0; ky < 3; ++ky)
            for (size_t kx = 0; kx < 3; ++kx) {
              const long long iy = static_cast<long long>(oy + ky) - static_cast<long long>(c.pad);
              const long long ix = static_cast<long long>(ox + kx) - static_cast<long long>(c.pad);
              if (iy < 0 || ix < 0 || iy >= static_cast<long long>(c.h) || ix >= static_cast<long long>(c.w)) continue;
              s += static_cast<double>(g[(o * c.ci + i) * 9 + ky * 3 + kx]) *
                   x[(i * c.h + static_cast<size_t>(iy)) * c.w + static_cast<size_t>(ix)];
            }
        if (c.residual) s += res[(o * ho + oy) * wo + ox];
        s = std::min(std::max(s, static_cast<double>(c.min)), static_cast<double>(c.max));
        const float got = y[(o * ho + oy) * out_stride + ox];
        if (!(std::fabs(got - s) <= test::f32_wino43_tol(s, 9 * c.ci)) && bad++ < 5) {
          ADD_FAILURE() << "co=" << o << " y=" << oy << " x=" << ox << ": got " << got << ", want " << s;
        }
      }
      for (size_t gx = wo; gx < out_stride; ++gx)
        if (y[(o * ho + oy) * out_stride + gx] != kGuard && bad++ < 5)
          ADD_FAILURE() << "write past the row end at co=" << o << " y=" << oy << " x=" << gx;
    }
  EXPECT_EQ(bad, 0u);
}

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

TEST(F32Winograd43, PlaneSizesAndPads) {
  std::mt19937 rng(kSeed);
  for (Isa isa : available_isas()) {
    for (size_t h : {1, 2, 3, 4, 5, 7, 8, 9, 17}) {
      for (size_t w : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33}) {
        for (size_t pad : {0, 1}) {
          if (h + 2 * pad < 3 || w + 2 * pad < 3) continue;
          run_case(isa, {.ci = 3, .co = 2, .h = h, .w = w, .pad = pad}, rng);
        }
      }
    }
  }
}

TEST(F32Winograd43, SegmentsResidualAndClamp) {
  std::mt19937 rng(kSeed + 1);
  for (Isa isa : available_isas()) {
    for (size_t seg : {1, 2, 3, 5}) run_case(isa, {.ci = 2, .co = 3, .h = 9, .w = 37, .pad = 1, .segment = seg}, rng);
    run_case(isa, {.ci = 4, .co = 2, .h = 11, .w = 13, .pad = 1, .residual = true}, rng);
    run_case(isa, {.ci = 4, .co = 2, .h = 11, .w = 13, .pad = 1, .min = 0.0f}, rng);
    run_case(isa, {.ci = 4, .co = 2, .h = 10, .w = 14, .pad = 0, .segment = 2, .residual = true, .min = -0.5f,
                   .max = 0.5f}, rng);
  }
}

TEST(F32Winograd43, ManyChannels) {
  std::mt19937 rng(kSeed + 2);
  for (Isa isa : available_isas()) run_case(isa, {.ci = 64, .co = 3, .h = 12, .w = 20, .pad = 1}, rng);
}

}  // namespace
}  // namespace nfuse::kernels
