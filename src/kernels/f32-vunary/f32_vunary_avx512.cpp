// AVX-512F f32-vunary kernels (this file alone is built with -mavx512f -mavx2 -mfma): 16 lanes
// per step, the tail by masked load and store so nothing past y[n-1] is touched.

// GCC 12's _mm512_max_ps and friends pass _mm512_undefined_ps() as the unused merge source,
// which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "kernels/f32-vunary/f32_vunary.h"
#include "kernels/f32-vunary/f32_vunary_constants.h"

namespace nfuse::kernels {
namespace {

using namespace vunary;  // NOLINT(google-build-using-namespace): the constants of this family

inline __m512 sign_or(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
inline __m512 abs16(__m512 a) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7FFFFFFF)));
}
inline __m512 sign16(__m512 a) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int32_t>(0x80000000u))));
}

// exp(z) split as s + (s*t)*p, z in [kSigmoidCutoff, 0] or NaN.
inline __m512 exp_parts(__m512 z, __m512& s, __m512& t) {
  __m512 n = _mm512_fmadd_ps(z, _mm512_set1_ps(kLog2e), _mm512_set1_ps(kMagicBias));
  s = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(n), 23));
  n = _mm512_sub_ps(n, _mm512_set1_ps(kMagicBias));
  t = _mm512_fmadd_ps(n, _mm512_set1_ps(kMinusLn2Hi), z);
  t = _mm512_fmadd_ps(n, _mm512_set1_ps(kMinusLn2Lo), t);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kP6), t, _mm512_set1_ps(kP5));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kP1));
  return _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
}

inline __m512 sigmoid16(__m512 x) {
  const __m512 z = sign_or(x, _mm512_set1_ps(-0.0f));  // -|x|
  const __m512 cutoff = _mm512_set1_ps(kSigmoidCutoff);
  const __mmask16 keep = _mm512_cmp_ps_mask(z, cutoff, _CMP_NLT_UQ);  // NaN kept
  __m512 s, t;
  const __m512 p = exp_parts(_mm512_max_ps(cutoff, z), s, t);  // max(c, NaN) = NaN
  const __m512 e = _mm512_fmadd_ps(_mm512_mul_ps(s, t), p, s);
  const __m512 f = _mm512_maskz_div_ps(keep, e, _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
  const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
  return _mm512_mask_sub_ps(f, pos, _mm512_set1_ps(1.0f), f);
}

inline __m512 tanh16(__m512 x) {
  __m512 z = _mm512_mul_ps(abs16(x), _mm512_set1_ps(-2.0f));
  z = _mm512_max_ps(_mm512_set1_ps(kTanhMinZ), z);  // max(c, NaN) = NaN
  __m512 s, t;
  const __m512 p = exp_parts(z, s, t);
  const __m512 em1 = _mm512_fmadd_ps(_mm512_mul_ps(s, t), p, _mm512_sub_ps(s, _mm512_set1_ps(1.0f)));
  const __m512 m = _mm512_div_ps(em1, _mm512_add_ps(em1, _mm512_set1_ps(2.0f)));  // -tanh(|x|)
  return sign_or(abs16(m), sign16(x));
}

enum class Op { kSigmoid, kTanh, kSilu };

template <Op kOp>
inline __m512 op16(__m512 x) {
  if constexpr (kOp == Op::kSigmoid) return sigmoid16(x);
  if constexpr (kOp == Op::kTanh) return tanh16(x);
  return _mm512_mul_ps(x, sigmoid16(x));
}

template <Op kOp>
inline void run(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, op16<kOp>(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, mask, op16<kOp>(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

}  // namespace

void f32_vsigmoid__avx512(const float* x, float* y, size_t n) { run<Op::kSigmoid>(x, y, n); }
void f32_vtanh__avx512(const float* x, float* y, size_t n) { run<Op::kTanh>(x, y, n); }
void f32_vsilu__avx512(const float* x, float* y, size_t n) { run<Op::kSilu>(x, y, n); }

void f32_vhardswish__avx512(const float* x, float* y, size_t n, float a, float b) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  auto op = [&](__m512 v) {
    const __m512 g = _mm512_fmadd_ps(va, v, vb);
    return _mm512_mul_ps(v, _mm512_min_ps(_mm512_max_ps(g, zero), one));
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, op(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, mask, op(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

}  // namespace nfuse::kernels
