// AVX2 + FMA3 depthwise kernels (this file alone is built with -mavx2 -mfma).
//
// The same scheme as the AVX-512 kernels (see there), 8 outputs per step: the input is the
// unpadded plane; interior steps use plain loads; steps whose reads leave the row and rows whose
// window leaves the plane use vmaskmovps loads (masked-off lanes read nothing and cannot fault;
// they give zero); a partial last step stores through a mask, so there is no scalar tail and no
// padded copy.
#include <immintrin.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::kernels {
namespace {

// Elements 0, 2, ..., 14 of a:b (16 floats).
inline __m256 even_of(__m256 a, __m256 b) {
  const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Bits [lo, hi) of a mask, lo and hi clamped to [0, n] (n <= 32).
inline uint32_t lane_bits(ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t n) {
  lo = lo < 0 ? 0 : lo;
  hi = hi > n ? n : hi;
  if (hi <= lo) return 0;
  const uint64_t upto = (uint64_t{1} << hi) - 1;
  return static_cast<uint32_t>(upto & ~((uint64_t{1} << lo) - 1));
}

// The low 8 bits of `bits` as a vmaskmovps lane mask.
inline __m256i lane_mask(uint32_t bits) {
  const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), sel), sel);
}

// f(i) for i in [0, N), as N inlined calls with a compile-time i (keeps the weight and
// accumulator arrays in registers; see the AVX-512 file).
template <size_t N, typename F>
__attribute__((always_inline)) inline void for_each(F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<size_t, I>{}), ...);
  }(std::make_index_sequence<N>{});
}

template <size_t K>
inline __m256 sum_of(const __m256 (&acc)[K]) {
  if constexpr (K == 3) {
    return _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), acc[2]);
  } else {
    static_assert(K == 5);
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])), acc[4]);
  }
}

struct Consts {
  __m256 bias, vmin, vmax, a, b;
  bool hswish;
};

inline __m256 finish(const Consts& c, __m256 acc) {
  acc = _mm256_min_ps(_mm256_max_ps(acc, c.vmin), c.vmax);
  if (c.hswish) {
    __m256 t = _mm256_fmadd_ps(c.a, acc, c.b);
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
    acc = _mm256_mul_ps(acc, t);
  }
  return acc;
}

// Steps [0, left_end) and [int_end, width) of every row are masked; the rest read whole vectors
// (a partial last step too, when its reads stay inside the row: only its store is masked).
struct ColPlan {
  size_t left_end = 0, int_end = 0;
};

template <size_t K, size_t S>
ColPlan plan_columns(const F32DwconvParams& p) {
  ColPlan cp;
  const size_t width = p.out_width, pad = p.pad_left, span = (K - 1) * p.dw;
  size_t x = 0;
  while (x < width && x * S < pad) x += 8;
  cp.left_end = x;
  while (x < width && x * S + span + 8 * S <= p.in_width + pad) x += 8;  // the last may be partial
  cp.int_end = x;
  return cp;
}

// One output row from K row pointers and K*K weight vectors. kBorder: some rows are outside the
// plane (row_mask[ky] == 0, the rest all ones), and every load is masked with it.
template <size_t K, size_t S, bool kBorder>
__attribute__((always_inline)) inline void dwconv_row(const F32DwconvParams& p, const Consts& c, const ColPlan& cp,
                                                      const float* const (&rows)[K], const uint32_t (&row_mask)[K],
                                                      const __m256 (&w)[K * K], float* out) {
  const size_t width = p.out_width, dw = p.dw, pad = p.pad_left;
  const ptrdiff_t in_w = static_cast<ptrdiff_t>(p.in_width);
  // One step at x0; kMasked: per-tap masks (the edges), else whole vectors (the interior).
  auto step = [&]<bool kMasked>(size_t x0, std::bool_constant<kMasked>) __attribute__((always_inline)) {
    const ptrdiff_t ix0 = static_cast<ptrdiff_t>(x0 * S) - static_cast<ptrdiff_t>(pad);
    uint32_t m[K];
    if constexpr (kMasked) {
      for_each<K>([&](auto kx) __attribute__((always_inline)) {
        const ptrdiff_t start = ix0 + static_cast<ptrdiff_t>(kx * dw);
        m[kx] = lane_bits(-start, in_w - start, static_cast<ptrdiff_t>(8 * S));
      });
    }
    __m256 acc[K];
    for_each<K>([&](auto ky) __attribute__((always_inline)) { acc[ky] = ky == 0 ? c.bias : _mm256_setzero_ps(); });
    for_each<K * K>([&](auto i) __attribute__((always_inline)) {
      constexpr size_t ky = decltype(i)::value / K, kx = decltype(i)::value % K;
      const float* src = rows[ky] + ix0 + static_cast<ptrdiff_t>(kx * dw);
      __m256 v;
      if constexpr (!kMasked && !kBorder) {
        v = S == 1 ? _mm256_loadu_ps(src) : even_of(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 8));
      } else {
        uint32_t mk = kMasked ? m[kx] : ~uint32_t{0};
        if (kBorder) mk &= row_mask[ky];
        if constexpr (S == 1) {
          v = _mm256_maskload_ps(src, lane_mask(mk));
        } else {
          v = even_of(_mm256_maskload_ps(src, lane_mask(mk)), _mm256_maskload_ps(src + 8, lane_mask(mk >> 8)));
        }
      }
      acc[ky] = _mm256_fmadd_ps(w[i], v, acc[ky]);
    });
    const __m256 r = finish(c, sum_of<K>(acc));
    const size_t n = width - x0 < 8 ? width - x0 : 8;
    if (n == 8) {
      _mm256_storeu_ps(out + x0, r);
    } else {
      _mm256_maskstore_ps(out + x0, lane_mask((1u << n) - 1u), r);
    }
  };
  size_t x = 0;
  for (; x < cp.left_end; x += 8) step(x, std::true_type{});
  for (; x < cp.int_end; x += 8) step(x, std::false_type{});
  for (; x < width; x += 8) step(x, std::true_type{});
}

// kHswish is a template argument so the variants without it keep its two constants out of the
// registers (the 5x5 kernels need 25 for the weights).
template <size_t K, size_t S, bool kHswish>
void dwconv_avx2_act(const F32DwconvParams& p, size_t y0, size_t y1) {
  __m256 w[K * K];
  for_each<K * K>([&](auto i) __attribute__((always_inline)) { w[i] = _mm256_set1_ps(p.w[i]); });
  const Consts c{_mm256_set1_ps(p.bias), _mm256_set1_ps(p.min),         _mm256_set1_ps(p.max),
                 _mm256_set1_ps(p.act_a), _mm256_set1_ps(p.act_b), kHswish};
  const ColPlan cp = plan_columns<K, S>(p);
  const size_t dh = p.dh;
  // Rows whose window leaves the plane: the outside taps get an all-zero mask.
  auto border_row = [&](size_t y) __attribute__((always_inline)) {  // inlined: keeps w in registers
    const F32DwconvTapRange ry = f32_dwconv_taps(y, K, S, dh, p.pad_top, p.in_height);
    const float* rows[K];
    uint32_t row_mask[K];
    for (size_t ky = 0; ky < K; ++ky) {
      const bool inside = ky >= ry.lo && ky < ry.hi;
      rows[ky] = inside ? p.in + (y * S + ky * dh - p.pad_top) * p.in_stride : p.in;  // p.in: never read
      row_mask[ky] = inside ? ~uint32_t{0} : 0;
    }
    dwconv_row<K, S, true>(p, c, cp, rows, row_mask, w, p.out + y * p.out_stride);
  };
  const F32DwconvTapRange inside = f32_dwconv_inside(y1, K, S, dh, p.pad_top, p.in_height);
  const size_t ya = inside.lo > y0 ? inside.lo : y0, yb = inside.hi > ya ? inside.hi : ya;
  size_t y = y0;
  for (; y < ya && y < y1; ++y) border_row(y);
  const uint32_t all[K] = {};  // unused on rows inside
  for (; y < yb; ++y) {
    const float* base = p.in + (y * S - p.pad_top) * p.in_stride;
    const float* rows[K];
    for_each<K>([&](auto ky) __attribute__((always_inline)) { rows[ky] = base + ky * dh * p.in_stride; });
    dwconv_row<K, S, false>(p, c, cp, rows, all, w, p.out + y * p.out_stride);
  }
  for (; y < y1; ++y) border_row(y);
}

template <size_t K, size_t S>
void dwconv_avx2(const F32DwconvParams& p, size_t y0, size_t y1) {
  if (p.act == F32DwconvAct::kHardSwish) {
    dwconv_avx2_act<K, S, true>(p, y0, y1);
  } else {
    dwconv_avx2_act<K, S, false>(p, y0, y1);
  }
}

}  // namespace

void f32_dwconv3x3s1__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<3, 1>(p, y0, y1); }
void f32_dwconv3x3s2__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<3, 2>(p, y0, y1); }
void f32_dwconv5x5s1__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<5, 1>(p, y0, y1); }
void f32_dwconv5x5s2__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<5, 2>(p, y0, y1); }

}  // namespace nfuse::kernels
