// f32_qvcvt.h kernels (every ISA this CPU runs) against nfuse::quantize_value, byte for byte: u8
// and s8 outputs at zero points across both ranges, every length 0..67 and 1000 (vector steps
// and tails), a guard byte after n, values around every rounding tie (k + 0.5 times the scale),
// saturation at both ends, +-inf, NaN (-> the zero point), -0, denormals, and scales that make
// the division round (1/3, 0.1); the centred kernels against the same value minus the zero point.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/quant_arithmetic.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

std::vector<float> inputs(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> wide(-300.0f, 300.0f);
  std::uniform_int_distribution<int> tie(-140, 280);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -0.0f, 1e-40f, -1e-40f, 3e38f, -3e38f};
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: x[i] = wide(rng) * scale; break;
      case 1: x[i] = (static_cast<float>(tie(rng)) + 0.5f) * scale; break;  // a tie after the division
      case 2: x[i] = specials[(i / 4) % 8]; break;
      default: x[i] = static_cast<float>(tie(rng)) * scale; break;
    }
  }
  return x;
}

TEST(F32Qvcvt, MatchesQuantizeValue) {
  std::mt19937 rng(29);
  for (Isa isa : test::available_isas()) {
    const F32QuantizeFn fn = f32_quantize_q8_select(isa);
    for (bool is_signed : {false, true}) {
      for (int32_t zp : {-128, -3, 0, 1, 127, 200, 255}) {
        if (is_signed ? zp > 127 : zp < 0) continue;
        for (float scale : {1.0f, 0.5f, 1.0f / 3.0f, 0.1f, 0.0173f, 7.25f}) {
          const F32QuantizeParams p = f32_quantize_params(scale, zp, is_signed);
          for (size_t n = 0; n <= 1000; n = n < 67 ? n + 1 : (n == 67 ? 1000 : 1001)) {
            const std::vector<float> x = inputs(n, scale, rng);
            std::vector<uint8_t> y(n + 1, 0xA5);
            fn(x.data(), n, p, y.data());
            for (size_t i = 0; i < n; ++i) {
              const int expect = is_signed ? static_cast<uint8_t>(nfuse::quantize_value<int8_t>(x[i], scale, zp))
                                           : nfuse::quantize_value<uint8_t>(x[i], scale, zp);
              ASSERT_EQ(static_cast<int>(y[i]), expect)
                  << "isa " << static_cast<int>(isa) << (is_signed ? " s8" : " u8") << " zp " << zp << " scale " << scale
                  << " n " << n << " i " << i << " x " << x[i];
            }
            ASSERT_EQ(y[n], 0xA5) << "wrote past n";
            if (is_signed) continue;  // the centred kernels serve DynamicQuantizeLinear: u8
            std::vector<float> c(n + 1, 7.5f);
            f32_quantize_centered_select(isa)(x.data(), n, p, c.data());
            for (size_t i = 0; i < n; ++i) {
              const float expect = static_cast<float>(nfuse::quantize_value<uint8_t>(x[i], scale, zp) - zp);
              ASSERT_EQ(c[i], expect) << "centred, isa " << static_cast<int>(isa) << " zp " << zp << " scale " << scale
                                      << " n " << n << " i " << i << " x " << x[i];
            }
            ASSERT_EQ(c[n], 7.5f) << "centred wrote past n";
          }
        }
      }
    }
  }
}

// `multiply`: v = x * scale, one f32 multiply (what nfuse.QLinearConvRegion's reference computes
// as a last step, x times f32(1 / y_scale), then quantizes with scale 1), on every ISA.
TEST(F32Qvcvt, MultiplyMatchesMultiplyThenQuantize) {
  std::mt19937 rng(37);
  for (Isa isa : test::available_isas()) {
    const F32QuantizeFn fn = f32_quantize_q8_select(isa);
    for (bool is_signed : {false, true}) {
      for (int32_t zp : {-128, 0, 127, 255}) {
        if (is_signed ? zp > 127 : zp < 0) continue;
        for (float y_scale : {1.0f / 3.0f, 0.1f, 0.0173f, 7.25f}) {
          const float inv = 1.0f / y_scale;
          F32QuantizeParams p = f32_quantize_params(inv, zp, is_signed);
          p.multiply = true;
          for (size_t n : {0, 1, 15, 16, 17, 33, 67, 1000}) {
            const std::vector<float> x = inputs(n, y_scale, rng);
            std::vector<uint8_t> y(n + 1, 0xA5);
            fn(x.data(), n, p, y.data());
            for (size_t i = 0; i < n; ++i) {
              const float v = x[i] * inv;
              const int expect = is_signed ? static_cast<uint8_t>(nfuse::quantize_value<int8_t>(v, 1.0f, zp))
                                           : nfuse::quantize_value<uint8_t>(v, 1.0f, zp);
              ASSERT_EQ(static_cast<int>(y[i]), expect) << isa_name(isa) << " zp " << zp << " y_scale " << y_scale
                                                        << " n " << n << " i " << i << " x " << x[i];
            }
            ASSERT_EQ(y[n], 0xA5) << "wrote past n";
          }
        }
      }
    }
  }
}

// The 16-bit kernels (QuantizeLinear to int16 / uint16: W8A16 activations) the same way, with
// inputs scaled to reach both ends of the 16-bit range.
TEST(F32Qvcvt, SixteenBitMatchesQuantizeValue) {
  std::mt19937 rng(31);
  for (Isa isa : test::available_isas()) {
    const F32Quantize16Fn fn = f32_quantize_q16_select(isa);
    for (bool is_signed : {false, true}) {
      for (int32_t zp : {-32768, -7, 0, 1, 32767, 40000, 65535}) {
        if (is_signed ? zp > 32767 : zp < 0) continue;
        for (float scale : {1.0f, 1.0f / 3.0f, 0.1f, 150.0f}) {
          const F32QuantizeParams p = f32_quantize_params(scale, zp, is_signed, 16);
          for (size_t n = 0; n <= 1000; n = n < 67 ? n + 1 : (n == 67 ? 1000 : 1001)) {
            std::vector<float> x = inputs(n, scale, rng);
            for (size_t i = 0; i < n; i += 3) x[i] *= 230.0f;  // past both ends of 16 bits
            std::vector<uint16_t> y(n + 1, 0xA5A5);
            fn(x.data(), n, p, y.data());
            for (size_t i = 0; i < n; ++i) {
              const int expect = is_signed ? static_cast<uint16_t>(nfuse::quantize_value<int16_t>(x[i], scale, zp))
                                           : nfuse::quantize_value<uint16_t>(x[i], scale, zp);
              ASSERT_EQ(static_cast<int>(y[i]), expect)
                  << "isa " << static_cast<int>(isa) << (is_signed ? " s16" : " u16") << " zp " << zp << " scale "
                  << scale << " n " << n << " i " << i << " x " << x[i];
            }
            ASSERT_EQ(y[n], 0xA5A5) << "wrote past n";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
