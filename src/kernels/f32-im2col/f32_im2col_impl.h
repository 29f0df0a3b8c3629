// The im2col loops of f32_im2col.h, included once per ISA inside a namespace of its own (see
// f32_im2col_{scalar,avx2,avx512}.cpp): plain loops the compiler vectorises for that ISA.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/f32-im2col/f32_im2col.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace nfuse::kernels::NFUSE_IM2COL_ISA_NS {

// dst[t] = src[2 * t] for t < n (stride-2 windows). Compilers leave this loop scalar, and a
// downsampling stem packs millions of these per run; with AVX-512 two loads and one two-source
// permute make 16, the last block masked so nothing past src[2n - 2] is read.
inline void copy_even(float* dst, const float* src, int64_t n) {
  int64_t t = 0;
#if defined(__AVX512F__)
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (; t + 16 <= n; t += 16) {
    const int64_t span = 2 * (n - t) - 1;  // floats this block may read: all 32 unless it is the last
    const __m512 lo = _mm512_loadu_ps(src + 2 * t);
    const __m512 hi = span >= 32
                          ? _mm512_loadu_ps(src + 2 * t + 16)
                          : _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << (span - 16)) - 1u), src + 2 * t + 16);
    _mm512_storeu_ps(dst + t, _mm512_permutex2var_ps(lo, even, hi));
  }
  if (t < n) {
    const int64_t m = n - t, span = 2 * m - 1;  // 1..31 floats
    const __mmask16 lo_mask = static_cast<__mmask16>(span >= 16 ? 0xFFFFu : (1u << span) - 1u);
    const __mmask16 hi_mask = static_cast<__mmask16>(span > 16 ? (1u << (span - 16)) - 1u : 0u);
    const __m512 lo = _mm512_maskz_loadu_ps(lo_mask, src + 2 * t);
    const __m512 hi = _mm512_maskz_loadu_ps(hi_mask, src + 2 * t + 16);
    _mm512_mask_storeu_ps(dst + t, static_cast<__mmask16>((1u << m) - 1u), _mm512_permutex2var_ps(lo, even, hi));
    return;
  }
#endif
  for (; t < n; ++t) dst[t] = src[2 * t];
}

inline void pack(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                 size_t np, size_t nr, float* dst) {
  const size_t hw = g.plane_stride ? g.plane_stride : g.h * g.w;
  const size_t khw = g.kh * g.kw;
  const bool direct = khw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.ho == g.h &&
                      g.wo == g.w && g.row_base == 0;
  const size_t panels = (np + nr - 1) / nr;
  // Where the strip starts in the output plane; each k row then walks the pixels with a running
  // (oy, ox) instead of dividing per panel (the divisions cost as much as the copies).
  const size_t oy0 = p0 / g.wo, ox0 = p0 % g.wo;
  const int64_t w = static_cast<int64_t>(g.w), sw = static_cast<int64_t>(g.sw);
  for (size_t kk = 0; kk < kc; ++kk) {
    const size_t k = k0 + kk;
    const size_t ic = k / khw, r = k % khw, ky = r / g.kw, kx = r % g.kw;
    const float* xc = x + ic * hw;
    const int64_t iy_off = static_cast<int64_t>(ky * g.dh) - static_cast<int64_t>(g.pad_top);
    const int64_t ix_off = static_cast<int64_t>(kx * g.dw) - static_cast<int64_t>(g.pad_left);
    // Output columns [ox_lo, ox_hi) read inside the input row for this kx, once per K row (a
    // per-segment division costs as much as copying the segment).
    const int64_t wo = static_cast<int64_t>(g.wo);
    const int64_t ox_lo = std::min(wo, ix_off >= 0 ? int64_t{0} : (-ix_off + sw - 1) / sw);
    const int64_t ox_hi = std::clamp(w - 1 - ix_off >= 0 ? (w - 1 - ix_off) / sw + 1 : int64_t{0}, ox_lo, wo);
    size_t oy = oy0, ox = ox0;
    for (size_t pn = 0; pn < panels; ++pn) {
      float* d = dst + pn * kc * nr + kk * nr;
      const size_t pstart = p0 + pn * nr;
      const size_t nc = std::min(nr, np - pn * nr);
      if (k >= kx_rows) {
        std::fill(d, d + nc, 1.0f);
      } else if (direct) {
        std::memcpy(d, xc + pstart, nc * sizeof(float));
      } else {
        for (size_t j = 0; j < nc;) {
          const size_t len = std::min(nc - j, g.wo - ox);
          const int64_t iy = static_cast<int64_t>(oy * g.sh) + iy_off;
          float* dd = d + j;
          if (iy < 0 || iy >= static_cast<int64_t>(g.h)) {
            std::fill(dd, dd + len, 0.0f);
          } else {
            const int64_t n = static_cast<int64_t>(len), sox = static_cast<int64_t>(ox);
            const int64_t lo = std::clamp(ox_lo - sox, int64_t{0}, n);  // segment pixels [lo, hi) inside
            const int64_t hi = std::clamp(ox_hi - sox, lo, n);
            const float* src = xc + (static_cast<size_t>(iy) - g.row_base) * g.w + (sox * sw + ix_off);
            std::fill(dd, dd + lo, 0.0f);
            if (sw == 1) {
              std::memcpy(dd + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(float));
            } else if (sw == 2) {  // the common downsampling stride
              copy_even(dd + lo, src + 2 * lo, hi - lo);
            } else {
              for (int64_t t = lo; t < hi; ++t) dd[t] = src[t * sw];
            }
            std::fill(dd + hi, dd + n, 0.0f);
          }
          j += len;
          ox += len;
          if (ox == g.wo) {
            ox = 0;
            ++oy;
          }
        }
      }
      std::fill(d + nc, d + nr, 0.0f);
    }
  }
}

}  // namespace nfuse::kernels::NFUSE_IM2COL_ISA_NS
