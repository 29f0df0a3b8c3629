// aarch64 Advanced SIMD microkernels of the 16-bit-activation GEMM (baseline ARMv8-A).
//
// 8x8 (KR 1): A is packed as int16, 8 rows per K step (used by lane); B as s8 rows of 8 columns
// widened with sxtl. smlal/smlal2 by lane multiply int16 x int16 into int32 and accumulate
// (|product| <= 2^22, exact); the int32 sums cover one K chunk (kQs16GemmKChunk = 256:
// |sum| <= 2^30) and are then added into int64 totals with saddw. Requantization: scvtf from
// int64 to f64 (exact below 2^53), fcvtn to f32 (one rounding to nearest even), fmul, clamp,
// fcvtns (round half to even), + zero point, sqxtn of values already within int16.
#include "kernels/qs16-gemm/qs16_gemm.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 8;

inline float32x4_t to_f32(const int64x2_t* t) {
  return vcombine_f32(vcvt_f32_f64(vcvtq_f64_s64(t[0])), vcvt_f32_f64(vcvtq_f64_s64(t[1])));
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c, size_t c_stride,
                 const Qs16GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const int8_t* b = reinterpret_cast<const int8_t*>(wb + kNr * sizeof(int64_t));

  int64x2_t tot[MR][4];
  for (size_t r = 0; r < MR; ++r)
    for (size_t q = 0; q < 4; ++q) tot[r][q] = vld1q_s64(reinterpret_cast<const int64_t*>(wb) + 2 * q);
  for (size_t k0 = 0; k0 < kc; k0 += kQs16GemmKChunk) {
    const size_t k1 = kc - k0 < kQs16GemmKChunk ? kc : k0 + kQs16GemmKChunk;
    int32x4_t acc[MR][2];
    for (size_t r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    if constexpr (MR == 8) {
      for (size_t k = k0; k < k1; ++k) {
        const int16x8_t vb = vmovl_s8(vld1_s8(b));
        const int16x8_t va = vld1q_s16(a);
        b += kNr;
        a += 8;
#define NFUSE_QS16_ROW(r)                                              \
  acc[r][0] = vmlal_laneq_s16(acc[r][0], vget_low_s16(vb), va, r);     \
  acc[r][1] = vmlal_high_laneq_s16(acc[r][1], vb, va, r);
        NFUSE_QS16_ROW(0)
        NFUSE_QS16_ROW(1)
        NFUSE_QS16_ROW(2)
        NFUSE_QS16_ROW(3)
        NFUSE_QS16_ROW(4)
        NFUSE_QS16_ROW(5)
        NFUSE_QS16_ROW(6)
        NFUSE_QS16_ROW(7)
#undef NFUSE_QS16_ROW
      }
    } else {
      static_assert(MR == 1, "8 or 1 rows");
      for (size_t k = k0; k < k1; ++k) {
        const int16x8_t vb = vmovl_s8(vld1_s8(b));
        const int16x8_t va = vdupq_n_s16(*a++);
        b += kNr;
        acc[0][0] = vmlal_s16(acc[0][0], vget_low_s16(vb), vget_low_s16(va));
        acc[0][1] = vmlal_high_s16(acc[0][1], vb, va);
      }
    }
    for (size_t r = 0; r < MR; ++r) {
      tot[r][0] = vaddw_s32(tot[r][0], vget_low_s32(acc[r][0]));
      tot[r][1] = vaddw_high_s32(tot[r][1], acc[r][0]);
      tot[r][2] = vaddw_s32(tot[r][2], vget_low_s32(acc[r][1]));
      tot[r][3] = vaddw_high_s32(tot[r][3], acc[r][1]);
    }
  }

  const float32x4_t mult0 = vld1q_f32(reinterpret_cast<const float*>(b));
  const float32x4_t mult1 = vld1q_f32(reinterpret_cast<const float*>(b) + 4);
  const float32x4_t lo = vdupq_n_f32(rq.lo);
  const float32x4_t hi = vdupq_n_f32(rq.hi);
  const int32x4_t zp = vdupq_n_s32(rq.zero_point);
  const uint16x8_t flip = vdupq_n_u16(rq.out_xor);
  for (size_t r = 0; r < mr; ++r) {
    float32x4_t x0 = vmulq_f32(to_f32(&tot[r][0]), mult0);
    float32x4_t x1 = vmulq_f32(to_f32(&tot[r][2]), mult1);
    x0 = vminq_f32(vmaxq_f32(x0, lo), hi);
    x1 = vminq_f32(vmaxq_f32(x1, lo), hi);
    const int32x4_t q0 = vaddq_s32(vcvtnq_s32_f32(x0), zp);
    const int32x4_t q1 = vaddq_s32(vcvtnq_s32_f32(x1), zp);
    const uint16x8_t v = veorq_u16(vreinterpretq_u16_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1))), flip);
    int16_t* row = c + r * c_stride;
    if (nc == kNr) {
      vst1q_s16(row, vreinterpretq_s16_u16(v));
    } else {
      int16_t t[kNr];
      vst1q_s16(t, vreinterpretq_s16_u16(v));
      std::memcpy(row, t, nc * sizeof(int16_t));
    }
  }
}

}  // namespace

void qs16_gemm__neon_8x8(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                         size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<8>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qs16_gemm__neon_1x8(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                         size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels

#endif  // defined(__aarch64__)
