// The portable kernel of f32_qvcvt.h (the statement of the arithmetic) and the per-ISA selection.
#include "kernels/f32-qvcvt/f32_qvcvt.h"

#include <algorithm>

namespace nfuse::kernels {

F32QuantizeParams f32_quantize_params(float scale, int32_t zero_point, bool is_signed, int bits) {
  F32QuantizeParams p;
  p.scale = scale;
  const int32_t qmin = bits == 16 ? (is_signed ? -32768 : 0) : (is_signed ? -128 : 0);
  const int32_t qmax = bits == 16 ? (is_signed ? 32767 : 65535) : (is_signed ? 127 : 255);
  p.lo = static_cast<float>(qmin - zero_point);
  p.hi = static_cast<float>(qmax - zero_point);
  p.zero_point = static_cast<float>(zero_point);
  p.is_signed = is_signed;
  return p;
}

namespace {

// q - zp: x / scale (x * scale with `multiply`: the q8 kernels only), NaN -> 0, clamped to
// [lo, hi], rounded half to even.
inline float centered_value(float x, const F32QuantizeParams& p, bool multiply = false) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding and subtracting rounds half to even
  float v = multiply ? x * p.scale : x / p.scale;
  v = v == v ? v : 0.0f;
  v = std::min(std::max(v, p.lo), p.hi);
  return (v + kMagic) - kMagic;  // exact for |v| <= 2^22, which the clamp guarantees
}

}  // namespace

void f32_quantize_q8__scalar(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y) {
  for (size_t i = 0; i < n; ++i)
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(centered_value(x[i], p, p.multiply) + p.zero_point));
}

void f32_quantize_q16__scalar(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y) {
  for (size_t i = 0; i < n; ++i)
    y[i] = static_cast<uint16_t>(static_cast<int32_t>(centered_value(x[i], p) + p.zero_point));
}

void f32_quantize_centered__scalar(const float* x, size_t n, const F32QuantizeParams& p, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = centered_value(x[i], p);
}

F32QuantizeFn f32_quantize_q8_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_quantize_q8__avx512;
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_quantize_q8__avx2;
#endif
  (void)isa;
  return f32_quantize_q8__scalar;
}

F32Quantize16Fn f32_quantize_q16_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_quantize_q16__avx512;
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_quantize_q16__avx2;
#endif
  (void)isa;
  return f32_quantize_q16__scalar;
}

F32QuantizeCenteredFn f32_quantize_centered_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_quantize_centered__avx512;
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_quantize_centered__avx2;
#endif
  (void)isa;
  return f32_quantize_centered__scalar;
}

}  // namespace nfuse::kernels
