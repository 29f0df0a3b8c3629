// AVX2 + FMA3 f32-vunary kernels (this file alone is built with -mavx2 -mfma): 8 lanes per step,
// the tail by masked load and store so nothing past y[n-1] is touched.
#include <immintrin.h>

#include <cstdint>

#include "kernels/f32-vunary/f32_vunary.h"
#include "kernels/f32-vunary/f32_vunary_constants.h"

namespace nfuse::kernels {
namespace {

using namespace vunary;  // NOLINT(google-build-using-namespace): the constants of this family

// exp(z) split as s + (s*t)*p, z in [kSigmoidCutoff, 0] or NaN.
inline __m256 exp_parts(__m256 z, __m256& s, __m256& t) {
  __m256 n = _mm256_fmadd_ps(z, _mm256_set1_ps(kLog2e), _mm256_set1_ps(kMagicBias));
  s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(n), 23));
  n = _mm256_sub_ps(n, _mm256_set1_ps(kMagicBias));
  t = _mm256_fmadd_ps(n, _mm256_set1_ps(kMinusLn2Hi), z);
  t = _mm256_fmadd_ps(n, _mm256_set1_ps(kMinusLn2Lo), t);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kP6), t, _mm256_set1_ps(kP5));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP1));
  return _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f));
}

inline __m256 sigmoid8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 z = _mm256_or_ps(x, sign);  // -|x|
  const __m256 cutoff = _mm256_set1_ps(kSigmoidCutoff);
  const __m256 flush = _mm256_cmp_ps(z, cutoff, _CMP_LT_OQ);
  __m256 s, t;
  const __m256 p = exp_parts(_mm256_max_ps(cutoff, z), s, t);  // max(c, NaN) = NaN
  const __m256 e = _mm256_fmadd_ps(_mm256_mul_ps(s, t), p, s);
  __m256 f = _mm256_div_ps(e, _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
  f = _mm256_andnot_ps(flush, f);
  const __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
  return _mm256_blendv_ps(f, _mm256_sub_ps(_mm256_set1_ps(1.0f), f), pos);
}

inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 z = _mm256_mul_ps(ax, _mm256_set1_ps(-2.0f));
  z = _mm256_max_ps(_mm256_set1_ps(kTanhMinZ), z);  // max(c, NaN) = NaN
  __m256 s, t;
  const __m256 p = exp_parts(z, s, t);
  const __m256 em1 = _mm256_fmadd_ps(_mm256_mul_ps(s, t), p, _mm256_sub_ps(s, _mm256_set1_ps(1.0f)));
  const __m256 m = _mm256_div_ps(em1, _mm256_add_ps(em1, _mm256_set1_ps(2.0f)));  // -tanh(|x|)
  return _mm256_or_ps(_mm256_andnot_ps(sign, m), _mm256_and_ps(sign, x));
}

inline __m256i tail_mask(size_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n)), lanes);
}

enum class Op { kSigmoid, kTanh, kSilu };

template <Op kOp>
inline __m256 op8(__m256 x) {
  if constexpr (kOp == Op::kSigmoid) return sigmoid8(x);
  if constexpr (kOp == Op::kTanh) return tanh8(x);
  return _mm256_mul_ps(x, sigmoid8(x));
}

template <Op kOp>
inline void run(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, op8<kOp>(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, mask, op8<kOp>(_mm256_maskload_ps(x + i, mask)));
  }
}

}  // namespace

void f32_vsigmoid__avx2(const float* x, float* y, size_t n) { run<Op::kSigmoid>(x, y, n); }
void f32_vtanh__avx2(const float* x, float* y, size_t n) { run<Op::kTanh>(x, y, n); }
void f32_vsilu__avx2(const float* x, float* y, size_t n) { run<Op::kSilu>(x, y, n); }

void f32_vhardswish__avx2(const float* x, float* y, size_t n, float a, float b) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  // A NaN x gives a NaN y whatever the clamp makes of its gate: x is a factor.
  auto op = [&](__m256 v) {
    const __m256 g = _mm256_fmadd_ps(va, v, vb);
    return _mm256_mul_ps(v, _mm256_min_ps(_mm256_max_ps(g, zero), one));
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, op(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, mask, op(_mm256_maskload_ps(x + i, mask)));
  }
}

}  // namespace nfuse::kernels
