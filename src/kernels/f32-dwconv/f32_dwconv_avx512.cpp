// AVX-512F depthwise kernels (this file alone is built with -mavx512f -mavx2 -mfma).
//
// The input is the unpadded plane. Each output row is 16-wide steps: interior steps (every tap's
// 16 (stride 1) or 32 (stride 2) floats inside the row) use plain loads; steps whose reads leave
// the row at the left or right edge use zero-masked loads (masked-off lanes neither read memory
// nor fault; the edge masks are worked out once per call, not per row); a partial last step
// stores through a mask, so there is no scalar tail and no padded copy. Rows whose window leaves
// the plane at the top or bottom (a few per plane) run every load masked, with an all-zero mask
// for the taps outside, so those read nothing and add exactly zero. When no step of the call
// needs a mask (the op's padded copies of small planes) a plain loop with no per-row set-up runs.

// GCC 12's _mm512_max_ps/_mm512_min_ps pass _mm512_undefined_ps() (a self-initialised variable)
// as the unused merge source, which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::kernels {
namespace {

// Elements p[0], p[2], ..., p[30] of two (masked) 16-float loads.
inline __m512 even_of(__m512 a, __m512 b) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(a, idx, b);
}

// Bits [lo, hi) of a 64-bit mask, lo and hi clamped to [0, n].
inline uint64_t lane_bits(ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t n) {
  lo = lo < 0 ? 0 : lo;
  hi = hi > n ? n : hi;
  if (hi <= lo) return 0;
  const uint64_t upto = hi >= 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  return upto & ~((uint64_t{1} << lo) - 1);
}

struct Consts {
  __m512 bias, vmin, vmax, a, b;
  bool hswish;
};

// f(i) for i in [0, N), as N inlined calls with a compile-time i.
template <size_t N, typename F>
__attribute__((always_inline)) inline void for_each(F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<size_t, I>{}), ...);
  }(std::make_index_sequence<N>{});
}

// f(ky, kx) for every tap, as K*K inlined calls with compile-time indices, so the weight and
// accumulator arrays are scalarised into registers (loops over them, even unrolled, left the
// weights on the stack and every FMA with a memory operand: twice the loads per step).
template <size_t K, typename F>
__attribute__((always_inline)) inline void for_each_tap(F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<size_t, I / K>{}, std::integral_constant<size_t, I % K>{}), ...);
  }(std::make_index_sequence<K * K>{});
}

// Accumulators per step: one per tap row for 3x3 (three chains of three FMAs); two for 5x5, where
// five would push the 25 weight vectors out of the 32 registers.
template <size_t K>
inline constexpr size_t kAccs = K == 3 ? 3 : 2;

template <size_t N>
inline __m512 sum_of(const __m512 (&acc)[N]) {
  if constexpr (N == 3) {
    return _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]);
  } else {
    static_assert(N == 2);
    return _mm512_add_ps(acc[0], acc[1]);
  }
}

inline void finish_store(const Consts& c, __m512 acc, float* out, __mmask16 m, bool full) {
  acc = _mm512_min_ps(_mm512_max_ps(acc, c.vmin), c.vmax);
  if (c.hswish) {
    __m512 t = _mm512_fmadd_ps(c.a, acc, c.b);
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(1.0f));
    acc = _mm512_mul_ps(acc, t);
  }
  if (full) {
    _mm512_storeu_ps(out, acc);
  } else {
    _mm512_mask_storeu_ps(out, m, acc);
  }
}

// Which 16-wide steps of a row need masks, and the masks of the usual ones, worked out once per
// call (they are the same for every row): steps [0, left_end) and [int_end, width) are masked,
// steps in between read whole vectors inside the row (a partial last step too, when its reads
// stay inside the row: only its store is masked).
template <size_t K>
struct ColPlan {
  static constexpr size_t kCachedRight = 4;
  size_t left_end = 0, int_end = 0;
  uint64_t left[K];                 // step 0 (when left_end > 0)
  uint64_t right[kCachedRight][K];  // steps int_end + 16 i (those below out_width)
};

// Per tap column kx, the bits of the step at x0 whose floats lie inside the row.
template <size_t K, size_t S>
inline void step_masks(const F32DwconvParams& p, size_t x0, uint64_t (&m)[K]) {
  const ptrdiff_t ix0 = static_cast<ptrdiff_t>(x0 * S) - static_cast<ptrdiff_t>(p.pad_left);
  const ptrdiff_t in_w = static_cast<ptrdiff_t>(p.in_width);
  for (size_t kx = 0; kx < K; ++kx) {
    const ptrdiff_t start = ix0 + static_cast<ptrdiff_t>(kx * p.dw);
    m[kx] = lane_bits(-start, in_w - start, static_cast<ptrdiff_t>(16 * S));
  }
}

template <size_t K, size_t S>
ColPlan<K> plan_columns(const F32DwconvParams& p) {
  ColPlan<K> cp;
  const size_t width = p.out_width, pad = p.pad_left, span = (K - 1) * p.dw;
  size_t x = 0;
  while (x < width && x * S < pad) x += 16;
  cp.left_end = x;
  while (x < width && x * S + span + 16 * S <= p.in_width + pad) x += 16;  // the last may be partial
  cp.int_end = x;
  if (cp.left_end > 0) step_masks<K, S>(p, 0, cp.left);
  for (size_t i = 0; i < ColPlan<K>::kCachedRight && cp.int_end + 16 * i < width; ++i) {
    step_masks<K, S>(p, cp.int_end + 16 * i, cp.right[i]);
  }
  return cp;
}

// One output row from K row pointers and K*K weight vectors. kBorder: some rows are outside the
// plane (row_mask[ky] == 0, the rest all ones), and every load is masked with it.
template <size_t K, size_t S, bool kBorder>
__attribute__((always_inline)) inline void dwconv_row(const F32DwconvParams& p, const Consts& c, const ColPlan<K>& cp,
                                                      const float* const (&rows)[K], const uint64_t (&row_mask)[K],
                                                      const __m512 (&w)[K * K], float* out) {
  const size_t width = p.out_width, dw = p.dw, pad = p.pad_left;
  // One step at x0; m: per-kx column masks, or null for a whole-vector (interior) step.
  // Inlined at each call, so the interior call's m == nullptr folds away and the weights stay in
  // registers (an out-of-line lambda kept them, and every captured value, in memory).
  auto step = [&](size_t x0, const uint64_t* m) __attribute__((always_inline)) {
    const ptrdiff_t ix0 = static_cast<ptrdiff_t>(x0 * S) - static_cast<ptrdiff_t>(pad);
    __m512 acc[kAccs<K>];
    for_each<kAccs<K>>([&](auto i) __attribute__((always_inline)) { acc[i] = i == 0 ? c.bias : _mm512_setzero_ps(); });
    for_each_tap<K>([&](auto ky, auto kx) __attribute__((always_inline)) {
      const float* src = rows[ky] + ix0 + static_cast<ptrdiff_t>(kx * dw);
      __m512 v;
      if (m == nullptr && !kBorder) {
        v = S == 1 ? _mm512_loadu_ps(src) : even_of(_mm512_loadu_ps(src), _mm512_loadu_ps(src + 16));
      } else {
        uint64_t mk = m ? m[kx] : ~uint64_t{0};
        if (kBorder) mk &= row_mask[ky];
        if constexpr (S == 1) {
          v = _mm512_maskz_loadu_ps(static_cast<__mmask16>(mk), src);
        } else {
          v = even_of(_mm512_maskz_loadu_ps(static_cast<__mmask16>(mk), src),
                      _mm512_maskz_loadu_ps(static_cast<__mmask16>(mk >> 16), src + 16));
        }
      }
      acc[ky % kAccs<K>] = _mm512_fmadd_ps(w[ky * K + kx], v, acc[ky % kAccs<K>]);
    });
    const size_t n = width - x0 < 16 ? width - x0 : 16;
    finish_store(c, sum_of(acc), out + x0, static_cast<__mmask16>((1u << n) - 1u), n == 16);
  };
  uint64_t local[K];
  auto masks_for = [&](size_t x0) -> const uint64_t* {
    if (x0 == 0 && cp.left_end > 0) return cp.left;
    const size_t i = (x0 - cp.int_end) / 16;
    if (x0 >= cp.int_end && i < ColPlan<K>::kCachedRight) return cp.right[i];
    step_masks<K, S>(p, x0, local);  // a wide pad or dilation: more edge steps than cached
    return local;
  };
  size_t x = 0;
  for (; x < cp.left_end; x += 16) step(x, masks_for(x));
  for (; x < cp.int_end; x += 16) step(x, nullptr);
  for (; x < width; x += 16) step(x, masks_for(x));
}

// kHswish is a template argument so the variants without it keep its two constants out of the
// registers (the 5x5 kernels need 25 for the weights).
template <size_t K, size_t S, bool kHswish>
void dwconv_avx512_act(const F32DwconvParams& p, size_t y0, size_t y1) {
  __m512 w[K * K];
  for_each<K * K>([&](auto i) __attribute__((always_inline)) { w[i] = _mm512_set1_ps(p.w[i]); });
  const Consts c{_mm512_set1_ps(p.bias), _mm512_set1_ps(p.min),         _mm512_set1_ps(p.max),
                 _mm512_set1_ps(p.act_a), _mm512_set1_ps(p.act_b), kHswish};
  const ColPlan<K> cp = plan_columns<K, S>(p);
  const size_t dh = p.dh;
  // Rows whose window leaves the plane: the outside taps get an all-zero mask.
  auto border_row = [&](size_t y) __attribute__((always_inline)) {  // inlined: keeps w in registers
    const F32DwconvTapRange ry = f32_dwconv_taps(y, K, S, dh, p.pad_top, p.in_height);
    const float* rows[K];
    uint64_t row_mask[K];
    for (size_t ky = 0; ky < K; ++ky) {
      const bool inside = ky >= ry.lo && ky < ry.hi;
      rows[ky] = inside ? p.in + (y * S + ky * dh - p.pad_top) * p.in_stride : p.in;  // p.in: never read
      row_mask[ky] = inside ? ~uint64_t{0} : 0;
    }
    dwconv_row<K, S, true>(p, c, cp, rows, row_mask, w, p.out + y * p.out_stride);
  };
  const F32DwconvTapRange inside = f32_dwconv_inside(y1, K, S, dh, p.pad_top, p.in_height);
  const size_t ya = inside.lo > y0 ? inside.lo : y0, yb = inside.hi > ya ? inside.hi : ya;
  if (ya == y0 && yb >= y1 && cp.left_end == 0 && cp.int_end >= p.out_width) {
    // Every step of every row reads whole vectors inside the plane (the op's padded copies of
    // small planes): the plainest loop, two accumulators, no per-row set-up; with rows of one or
    // two steps its overhead is what shows.
    const size_t width = p.out_width, stride = p.in_stride, dw = p.dw;
    for (size_t y = y0; y < y1; ++y) {
      const float* in = p.in + (y * S - p.pad_top) * stride - p.pad_left;
      float* out = p.out + y * p.out_stride;
      for (size_t x = 0; x < width; x += 16) {
        __m512 acc[2] = {c.bias, _mm512_setzero_ps()};
        for_each_tap<K>([&](auto ky, auto kx) __attribute__((always_inline)) {
          const float* src = in + ky * dh * stride + x * S + kx * dw;
          const __m512 v = S == 1 ? _mm512_loadu_ps(src) : even_of(_mm512_loadu_ps(src), _mm512_loadu_ps(src + 16));
          acc[(ky + kx) % 2] = _mm512_fmadd_ps(w[ky * K + kx], v, acc[(ky + kx) % 2]);
        });
        const size_t n = width - x < 16 ? width - x : 16;
        finish_store(c, sum_of(acc), out + x, static_cast<__mmask16>((1u << n) - 1u), n == 16);
      }
    }
    return;
  }
  size_t y = y0;
  for (; y < ya && y < y1; ++y) border_row(y);
  const uint64_t all[K] = {};  // unused on rows inside
  for (; y < yb; ++y) {
    const float* base = p.in + (y * S - p.pad_top) * p.in_stride;
    const float* rows[K];
    for_each<K>([&](auto ky) __attribute__((always_inline)) { rows[ky] = base + ky * dh * p.in_stride; });
    dwconv_row<K, S, false>(p, c, cp, rows, all, w, p.out + y * p.out_stride);
  }
  for (; y < y1; ++y) border_row(y);
}

template <size_t K, size_t S>
void dwconv_avx512(const F32DwconvParams& p, size_t y0, size_t y1) {
  if (p.act == F32DwconvAct::kHardSwish) {
    dwconv_avx512_act<K, S, true>(p, y0, y1);
  } else {
    dwconv_avx512_act<K, S, false>(p, y0, y1);
  }
}

}  // namespace

void f32_dwconv3x3s1__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<3, 1>(p, y0, y1); }
void f32_dwconv3x3s2__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<3, 2>(p, y0, y1); }
void f32_dwconv5x5s1__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<5, 1>(p, y0, y1); }
void f32_dwconv5x5s2__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<5, 2>(p, y0, y1); }

}  // namespace nfuse::kernels
