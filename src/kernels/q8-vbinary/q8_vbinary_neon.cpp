// aarch64 Advanced SIMD q8-vbinary kernels: 16 elements per step as four vectors of 4 f32 lanes,
// the last < 16 by q8_vbinary_one. vfmaq_f32 is the single-rounding FMA ref's std::fma is, and
// vcvtnq_s32_f32 rounds to nearest even like std::nearbyint under the default FPCR.
#include "kernels/q8-vbinary/q8_vbinary.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <type_traits>

namespace nfuse::kernels {
namespace {

template <typename T>
inline int32x4x4_t widen16(const T* p) {
  int32x4x4_t r;
  if constexpr (std::is_signed_v<T>) {
    const int8x16_t x = vld1q_s8(p);
    const int16x8_t lo = vmovl_s8(vget_low_s8(x)), hi = vmovl_s8(vget_high_s8(x));
    r.val[0] = vmovl_s16(vget_low_s16(lo));
    r.val[1] = vmovl_s16(vget_high_s16(lo));
    r.val[2] = vmovl_s16(vget_low_s16(hi));
    r.val[3] = vmovl_s16(vget_high_s16(hi));
  } else {
    const uint8x16_t x = vld1q_u8(p);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(x)), hi = vmovl_u8(vget_high_u8(x));
    r.val[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
    r.val[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
    r.val[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
    r.val[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
  }
  return r;
}

template <typename T, bool kMul, bool kConstB, bool kSwapped>
void run(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  if (n == 0) return;  // b[0] (the scalar form's operand) may not exist
  const int32x4_t a_zp = vdupq_n_s32(p.a_zp), b_zp = vdupq_n_s32(p.b_zp), y_zp = vdupq_n_s32(p.y_zp);
  const float32x4_t a_mult = vdupq_n_f32(p.a_mult), b_mult = vdupq_n_f32(p.b_mult);
  const float32x4_t lo = vdupq_n_f32(static_cast<float>(std::numeric_limits<T>::lowest() - p.y_zp));
  const float32x4_t hi = vdupq_n_f32(static_cast<float>(std::numeric_limits<T>::max() - p.y_zp));
  const int32x4_t b_const = vdupq_n_s32(kConstB ? static_cast<int32_t>(b[0]) : 0);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const int32x4x4_t av = widen16(a + i);
    int32x4x4_t bv;
    if constexpr (kConstB) {
      bv.val[0] = bv.val[1] = bv.val[2] = bv.val[3] = b_const;
    } else {
      bv = widen16(b + i);
    }
    int32x4_t q[4];
    for (int k = 0; k < 4; ++k) {
      const int32x4_t ac = vsubq_s32(av.val[k], a_zp), bc = vsubq_s32(bv.val[k], b_zp);
      float32x4_t v;
      if constexpr (kMul) {
        v = vmulq_f32(vcvtq_f32_s32(vmulq_s32(ac, bc)), a_mult);
      } else if constexpr (kSwapped) {
        v = vfmaq_f32(vmulq_f32(vcvtq_f32_s32(ac), a_mult), vcvtq_f32_s32(bc), b_mult);
      } else {
        v = vfmaq_f32(vmulq_f32(vcvtq_f32_s32(bc), b_mult), vcvtq_f32_s32(ac), a_mult);
      }
      v = vminq_f32(vmaxq_f32(v, lo), hi);
      q[k] = vaddq_s32(vcvtnq_s32_f32(v), y_zp);
    }
    const int16x8_t w0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
    const int16x8_t w1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
    if constexpr (std::is_signed_v<T>) {
      vst1q_s8(y + i, vcombine_s8(vqmovn_s16(w0), vqmovn_s16(w1)));
    } else {
      vst1q_u8(y + i, vcombine_u8(vqmovun_s16(w0), vqmovun_s16(w1)));
    }
  }
  for (; i < n; ++i) y[i] = q8_vbinary_one<T, kMul, kConstB>(a[i], b[kConstB ? 0 : i], p);
}

template <typename T, bool kMul, bool kConstB>
void dispatch(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  if (kConstB && !kMul && p.swapped) run<T, kMul, kConstB, true>(a, b, y, n, p);
  else run<T, kMul, kConstB, false>(a, b, y, n, p);
}

}  // namespace

void qu8_vadd__neon(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, false, false>(a, b, y, n, p);
}
void qu8_vaddc__neon(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, false, true>(a, b, y, n, p);
}
void qu8_vmul__neon(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, true, false>(a, b, y, n, p);
}
void qu8_vmulc__neon(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, true, true>(a, b, y, n, p);
}
void qs8_vadd__neon(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, false, false>(a, b, y, n, p);
}
void qs8_vaddc__neon(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, false, true>(a, b, y, n, p);
}
void qs8_vmul__neon(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, true, false>(a, b, y, n, p);
}
void qs8_vmulc__neon(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, true, true>(a, b, y, n, p);
}

}  // namespace nfuse::kernels

#endif  // __aarch64__
