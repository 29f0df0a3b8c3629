// Quantized depthwise 3x3 kernels (src/kernels/qu8-dwconv) against an independent reference:
// the int64 sum of (x - x_zp) * w + bias, requantized by kernels/quant_arithmetic.h's requantize_value,
// on the scalar kernel and every SIMD kernel this CPU runs. Strides 1 / 2 on both axes, output
// widths 1..70 and MobileNet's 112, u8 / s8 outputs with their zero points, multipliers that
// saturate, extreme weights (-128, 127) and bytes (0, 255); outputs past out_width and rows
// outside [y0, y1) must stay untouched.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qu8-dwconv/qu8_dwconv.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;

struct Kernel {
  std::string name;
  Qu8DwconvFn fn;
};

std::vector<Kernel> kernels_to_test() {
  std::vector<Kernel> v = {{"scalar", qu8_dwconv3x3__scalar}};
  if (isa_supported(Isa::kAvx512)) {
    if (Qu8DwconvFn f = qu8_dwconv3x3_select(Isa::kAvx512)) v.push_back({"avx512vbmi", f});
  }
  return v;
}

TEST(Qu8Dwconv, SelectOnlyWhereSupported) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kNeon}) EXPECT_EQ(qu8_dwconv3x3_select(isa), nullptr);
}

TEST(Qu8Dwconv, MatchesReference) {
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> byte(0, 255), pick(0, 9);
  std::vector<size_t> widths;
  for (size_t w = 1; w <= 70; ++w) widths.push_back(w);
  widths.push_back(112);
  for (const Kernel& k : kernels_to_test()) {
    for (size_t wo : widths) {
      for (size_t sh : {1, 2}) {
        for (size_t sw : {1, 2}) {
          for (bool y_signed : {false, true}) {
            const size_t ho = 1 + (wo * 7 + sh) % 5;
            const size_t stride = qu8_dwconv_row_bytes(wo, sw) + (wo % 3);
            const size_t rows = (ho - 1) * sh + 3;
            std::vector<uint8_t> in(rows * stride);
            for (uint8_t& b : in) {
              const int p = pick(rng);
              b = static_cast<uint8_t>(p == 0 ? 0 : p == 1 ? 255 : byte(rng));
            }
            int8_t w[9];
            for (int8_t& v : w) {
              const int p = pick(rng);
              v = static_cast<int8_t>(p == 0 ? -128 : p == 1 ? 127 : byte(rng) - 128);
            }
            const int32_t zp = byte(rng);
            const int32_t bias = static_cast<int32_t>(rng() % 200001) - 100000;
            const float mult = pick(rng) == 0 ? 0.5f : 0.0005f + 0.0001f * static_cast<float>(pick(rng));
            const int32_t y_zp = y_signed ? byte(rng) - 128 : byte(rng);
            Qu8DwconvParams p;
            p.in = in.data();
            p.in_stride = stride;
            int32_t wsum = 0;
            for (int8_t v : w) wsum += v;
            for (size_t kx = 0; kx < 3; ++kx) p.w[kx] = qu8_dwconv_pack_column(w, kx);
            p.bias = bias - zp * wsum;
            p.multiplier = mult;
            p.rq = qu8_requant(y_signed, y_zp, y_signed ? -128 : 0, y_signed ? 127 : 255);
            const size_t out_stride = wo + 5;
            std::vector<uint8_t> out((ho + 2) * out_stride, 0x5A);
            p.out = out.data() + out_stride;  // row -1 and row ho are canaries
            p.out_stride = out_stride;
            p.out_width = wo;
            p.sh = sh;
            p.sw = sw;
            k.fn(p, 0, ho);
            for (size_t y = 0; y < ho; ++y) {
              for (size_t x = 0; x < wo; ++x) {
                int64_t acc = bias;
                for (size_t ky = 0; ky < 3; ++ky) {
                  for (size_t kx = 0; kx < 3; ++kx) {
                    acc += (static_cast<int64_t>(in[(y * sh + ky) * stride + x * sw + kx]) - zp) * w[ky * 3 + kx];
                  }
                }
                const uint8_t got = out[(y + 1) * out_stride + x];
                const std::string where = k.name + " wo " + std::to_string(wo) + " sh " + std::to_string(sh) + " sw " +
                                          std::to_string(sw) + " y " + std::to_string(y) + " x " + std::to_string(x);
                if (y_signed) {
                  ASSERT_EQ(static_cast<int8_t>(got), nfuse::requantize_value<int8_t>(acc, mult, y_zp)) << where;
                } else {
                  ASSERT_EQ(got, nfuse::requantize_value<uint8_t>(acc, mult, y_zp)) << where;
                }
              }
              for (size_t x = wo; x < out_stride; ++x) ASSERT_EQ(out[(y + 1) * out_stride + x], 0x5A) << k.name;
            }
            for (size_t x = 0; x < out_stride; ++x) {
              ASSERT_EQ(out[x], 0x5A) << k.name;
              ASSERT_EQ(out[(ho + 1) * out_stride + x], 0x5A) << k.name;
            }
          }
        }
      }
    }
  }
}

// rq.f32_out: f32(acc) * multiplier as floats (a float epilogue's input), bit for bit, and
// nothing written past out_width or outside the rows.
TEST(Qu8Dwconv, FloatOutput) {
  std::mt19937 rng(kSeed + 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Kernel& k : kernels_to_test()) {
    for (size_t wo : {1, 15, 16, 17, 33, 70}) {
      for (size_t sw : {1, 2}) {
        const size_t ho = 3, sh = 2;
        const size_t stride = qu8_dwconv_row_bytes(wo, sw);
        std::vector<uint8_t> in(((ho - 1) * sh + 3) * stride);
        for (uint8_t& b : in) b = static_cast<uint8_t>(byte(rng));
        int8_t w[9];
        for (int8_t& v : w) v = static_cast<int8_t>(byte(rng) - 128);
        const int32_t zp = byte(rng), bias = static_cast<int32_t>(rng() % 200001) - 100000;
        int32_t wsum = 0;
        for (int8_t v : w) wsum += v;
        Qu8DwconvParams p;
        p.in = in.data();
        p.in_stride = stride;
        for (size_t kx = 0; kx < 3; ++kx) p.w[kx] = qu8_dwconv_pack_column(w, kx);
        p.bias = bias - zp * wsum;
        p.multiplier = 0.0173f;
        p.rq.f32_out = true;
        const size_t out_stride = wo + 3;
        std::vector<float> out((ho + 2) * out_stride, -7.5f);
        p.out = reinterpret_cast<uint8_t*>(out.data() + out_stride);
        p.out_stride = out_stride;
        p.out_width = wo;
        p.sh = sh;
        p.sw = sw;
        k.fn(p, 0, ho);
        for (size_t y = 0; y < ho + 2; ++y) {
          for (size_t x = 0; x < out_stride; ++x) {
            const float got = out[y * out_stride + x];
            if (y == 0 || y > ho || x >= wo) {
              ASSERT_EQ(got, -7.5f) << k.name << " wrote outside the tile";
              continue;
            }
            int64_t acc = bias;
            for (size_t ky = 0; ky < 3; ++ky)
              for (size_t kx = 0; kx < 3; ++kx)
                acc += (static_cast<int64_t>(in[((y - 1) * sh + ky) * stride + x * sw + kx]) - zp) * w[ky * 3 + kx];
            ASSERT_EQ(got, static_cast<float>(acc) * 0.0173f) << k.name << " wo " << wo << " sw " << sw << " x " << x;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
