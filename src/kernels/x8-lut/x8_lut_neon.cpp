// aarch64 Advanced SIMD x8-lut kernel: tbl/tbx take up to four q registers (64 table bytes), so
// the table is four quarters. tbl of the first quarter gives entries 0..63 (0 elsewhere); tbx of
// quarter k with index - 64 k fills entries 64 k .. 64 k + 63 and leaves every other byte
// alone, because the wrapped index is then >= 64, out of tbx's range.
#include "kernels/x8-lut/x8_lut.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace nfuse::kernels {
namespace {

inline uint8x16_t lookup(const uint8x16x4_t (&t)[4], uint8x16_t v) {
  const uint8x16_t k64 = vdupq_n_u8(64);
  uint8x16_t y = vqtbl4q_u8(t[0], v);
  v = vsubq_u8(v, k64);
  y = vqtbx4q_u8(y, t[1], v);
  v = vsubq_u8(v, k64);
  y = vqtbx4q_u8(y, t[2], v);
  v = vsubq_u8(v, k64);
  return vqtbx4q_u8(y, t[3], v);
}

}  // namespace

void x8_lut__neon_u32(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  const uint8x16x4_t t[4] = {vld1q_u8_x4(table), vld1q_u8_x4(table + 64), vld1q_u8_x4(table + 128),
                             vld1q_u8_x4(table + 192)};
  for (; n >= 32; n -= 32, x += 32, y += 32) {
    const uint8x16_t v0 = vld1q_u8(x);
    const uint8x16_t v1 = vld1q_u8(x + 16);
    vst1q_u8(y, lookup(t, v0));
    vst1q_u8(y + 16, lookup(t, v1));
  }
  for (; n >= 16; n -= 16, x += 16, y += 16) vst1q_u8(y, lookup(t, vld1q_u8(x)));
  if (n != 0) {
    uint8_t buf[16] = {};
    std::memcpy(buf, x, n);
    vst1q_u8(buf, lookup(t, vld1q_u8(buf)));
    std::memcpy(y, buf, n);
  }
}

}  // namespace nfuse::kernels

#endif  // __aarch64__
