// aarch64 Advanced SIMD microkernels of the quantized GEMM (baseline ARMv8-A: no dotprod / i8mm
// needed; sdot/udot take same-signed operands only and usdot needs ARMv8.6 I8MM).
//
// 8x8 (KR 1): A is packed as u16 (zero-extended u8, so it is also a valid int16 0..255), B as s8
// rows of 8 columns widened with sxtl. smlal/smlal2 by lane multiply int16 x int16 into int32
// and accumulate (|product| <= 255 * 128, exact; adds wrap mod 2^32 as in the scalar kernel).
// 16 q-register accumulators, 1 for the 8 A values of a K step (used by lane), 1 for B.
// Requantization: scvtf (round to nearest even under the default FPCR), fmul, fmax/fmin clamp,
// fcvtns (round half to even, always), + zero point, sqxtn/sqxtun narrowing of values already
// in [qmin, qmax].
#include "kernels/qu8-gemm/qu8_gemm.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 8;

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const void* a_panel, const void* w, void* c, size_t c_stride,
                 const Qu8GemmRequant& rq) {
  const uint16_t* a = static_cast<const uint16_t*>(a_panel);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const int8_t* b = reinterpret_cast<const int8_t*>(wb + kNr * sizeof(int32_t));

  int32x4_t acc[MR][2];
  {
    const int32x4_t b0 = vld1q_s32(reinterpret_cast<const int32_t*>(wb));
    const int32x4_t b1 = vld1q_s32(reinterpret_cast<const int32_t*>(wb + 16));
    for (size_t r = 0; r < MR; ++r) {
      acc[r][0] = b0;
      acc[r][1] = b1;
    }
  }
  if constexpr (MR == 8) {
    for (size_t k = 0; k < kc; ++k) {
      const int16x8_t vb = vmovl_s8(vld1_s8(b));
      const int16x8_t va = vreinterpretq_s16_u16(vld1q_u16(a));
      b += kNr;
      a += 8;
#define NFUSE_QU8_ROW(r)                                                      \
  acc[r][0] = vmlal_laneq_s16(acc[r][0], vget_low_s16(vb), va, r);            \
  acc[r][1] = vmlal_high_laneq_s16(acc[r][1], vb, va, r);
      NFUSE_QU8_ROW(0)
      NFUSE_QU8_ROW(1)
      NFUSE_QU8_ROW(2)
      NFUSE_QU8_ROW(3)
      NFUSE_QU8_ROW(4)
      NFUSE_QU8_ROW(5)
      NFUSE_QU8_ROW(6)
      NFUSE_QU8_ROW(7)
#undef NFUSE_QU8_ROW
    }
  } else {
    static_assert(MR == 1, "8 or 1 rows");
    // One row: 4 K steps in flight on separate accumulators (smlal latency), summed at the end.
    int32x4_t odd[3][2] = {};
    size_t k = 0;
    for (; k + 4 <= kc; k += 4) {
      const int16x4_t va = vreinterpret_s16_u16(vld1_u16(a + k));
      const int16x8_t vb0 = vmovl_s8(vld1_s8(b));
      const int16x8_t vb1 = vmovl_s8(vld1_s8(b + 8));
      const int16x8_t vb2 = vmovl_s8(vld1_s8(b + 16));
      const int16x8_t vb3 = vmovl_s8(vld1_s8(b + 24));
      b += 4 * kNr;
      acc[0][0] = vmlal_lane_s16(acc[0][0], vget_low_s16(vb0), va, 0);
      acc[0][1] = vmlal_high_lane_s16(acc[0][1], vb0, va, 0);
      odd[0][0] = vmlal_lane_s16(odd[0][0], vget_low_s16(vb1), va, 1);
      odd[0][1] = vmlal_high_lane_s16(odd[0][1], vb1, va, 1);
      odd[1][0] = vmlal_lane_s16(odd[1][0], vget_low_s16(vb2), va, 2);
      odd[1][1] = vmlal_high_lane_s16(odd[1][1], vb2, va, 2);
      odd[2][0] = vmlal_lane_s16(odd[2][0], vget_low_s16(vb3), va, 3);
      odd[2][1] = vmlal_high_lane_s16(odd[2][1], vb3, va, 3);
    }
    for (; k < kc; ++k) {
      const int16x8_t vb = vmovl_s8(vld1_s8(b));
      const int16x8_t va = vdupq_n_s16(static_cast<int16_t>(a[k]));
      b += kNr;
      acc[0][0] = vmlal_s16(acc[0][0], vget_low_s16(vb), vget_low_s16(va));
      acc[0][1] = vmlal_high_s16(acc[0][1], vb, va);
    }
    for (size_t h = 0; h < 2; ++h) {
      acc[0][h] = vaddq_s32(vaddq_s32(acc[0][h], odd[0][h]), vaddq_s32(odd[1][h], odd[2][h]));
    }
  }

  if (rq.int32_out) {
    for (size_t r = 0; r < mr; ++r) {
      int32_t* row = static_cast<int32_t*>(c) + r * c_stride;
      if (nc == kNr) {
        vst1q_s32(row, acc[r][0]);
        vst1q_s32(row + 4, acc[r][1]);
      } else {
        int32_t t[kNr];
        vst1q_s32(t, acc[r][0]);
        vst1q_s32(t + 4, acc[r][1]);
        std::memcpy(row, t, nc * sizeof(int32_t));
      }
    }
    return;
  }

  const float32x4_t mult0 = vld1q_f32(reinterpret_cast<const float*>(b));
  const float32x4_t mult1 = vld1q_f32(reinterpret_cast<const float*>(b) + 4);
  const float32x4_t lo = vdupq_n_f32(rq.lo);
  const float32x4_t hi = vdupq_n_f32(rq.hi);
  const int32x4_t zp = vdupq_n_s32(rq.zero_point);
  const uint8x8_t flip = vdup_n_u8(static_cast<uint8_t>(rq.out_xor));
  for (size_t r = 0; r < mr; ++r) {
    float32x4_t x0 = vmulq_f32(vcvtq_f32_s32(acc[r][0]), mult0);
    float32x4_t x1 = vmulq_f32(vcvtq_f32_s32(acc[r][1]), mult1);
    x0 = vminq_f32(vmaxq_f32(x0, lo), hi);
    x1 = vminq_f32(vmaxq_f32(x1, lo), hi);
    const int32x4_t q0 = vaddq_s32(vcvtnq_s32_f32(x0), zp);
    const int32x4_t q1 = vaddq_s32(vcvtnq_s32_f32(x1), zp);
    const uint8x8_t bytes = veor_u8(vqmovun_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1))), flip);
    uint8_t* row = static_cast<uint8_t*>(c) + r * c_stride;
    if (nc == kNr) {
      vst1_u8(row, bytes);
    } else {
      uint8_t t[kNr];
      vst1_u8(t, bytes);
      std::memcpy(row, t, nc);
    }
  }
}

}  // namespace

void qu8_gemm__neon_8x8(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c, size_t c_stride,
                        const Qu8GemmRequant& rq) {
  gemm<8>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qu8_gemm__neon_1x8(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c, size_t c_stride,
                        const Qu8GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels

#endif  // defined(__aarch64__)
