// QConvPaddedRows (cpu_qconv_padded.h): the padded, phase-split rows of a quantized
// convolution's input, filled and packed for the W * X GEMM.
#include "backends/cpu/cpu_qconv_padded.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2 (baseline x86-64): the copies and the stride-2 column split
#endif

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kMaxPhases = 16;  // fill's per-phase table (larger strides: per row)

// memcpy / memset for the short padded rows (56, 28, 14 or 7 bytes for ResNet-50's maps,
// 1-byte pads), inline: ~95k rows per ResNet-50 run, where the library calls cost more than the
// copies. Exact: chunks end on an overlapping last chunk, never past n.
inline void copy_short(uint8_t* dst, const uint8_t* src, size_t n) {
#if defined(__x86_64__)
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + n - 16)));
    return;
  }
#endif
  if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
    return;
  }
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
    return;
  }
  if (n > 0) dst[0] = src[0];  // not a loop: GCC would make it a memcpy call again
  if (n > 1) dst[1] = src[1];
  if (n > 2) dst[2] = src[2];
}

inline void fill_short(uint8_t* dst, uint8_t v, size_t n) {
#if defined(__x86_64__)
  if (n >= 16) {
    const __m128i b = _mm_set1_epi8(static_cast<char>(v));
    for (size_t i = 0; i + 16 < n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16), b);
    return;
  }
#endif
  if (n >= 8) {
    const uint64_t b = 0x0101010101010101ull * v;
    std::memcpy(dst, &b, 8);
    std::memcpy(dst + n - 8, &b, 8);
    return;
  }
  if (n >= 4) {
    const uint32_t b = 0x01010101u * v;
    std::memcpy(dst, &b, 4);
    std::memcpy(dst + n - 4, &b, 4);
    return;
  }
  if (n > 0) dst[0] = v;  // not a loop: GCC would make it a memset call again
  if (n > 1) dst[1] = v;
  if (n > 2) dst[2] = v;
}

// Whether some tap reads column phase `ph` (kx * dw % sw == ph for some kx).
bool phase_read(const Conv2dGeometry& g, size_t ph) {
  for (size_t kx = 0; kx < g.kw; ++kx)
    if (kx * g.dw % g.sw == ph) return true;
  return false;
}

// Whether some tap reads padded row r (r = oy * sh + ky * dh for some ky; e.g. not the odd rows
// of a 1x1 stride 2, half of a ResNet downsample's copy). Blocks start at multiples of sh, so a
// block's row r_rel reads the same as padded row r_rel.
bool row_read(const Conv2dGeometry& g, size_t r) {
  for (size_t ky = 0; ky < g.kh && ky * g.dh <= r; ++ky)
    if ((r - ky * g.dh) % g.sh == 0) return true;
  return false;
}

}  // namespace

QConvPaddedRows::QConvPaddedRows(const Conv2dGeometry& g, int32_t x_zp, bool x_signed)
    : g_(g), channels_(g.c / g.group), pad_(static_cast<uint8_t>(x_zp)), x_signed_(x_signed) {
  k_ = channels_ * g.kh * g.kw;
}

size_t QConvPaddedRows::plane_bytes(size_t out_rows) const { return rows(std::max<size_t>(out_rows, 1)) * g_.sw * cols(); }

void QConvPaddedRows::row_offsets(size_t out_rows, size_t* o) const {
  const size_t plane = plane_bytes(out_rows), row_bytes = g_.sw * cols();
  for (size_t c = 0; c < channels_; ++c)
    for (size_t ky = 0; ky < g_.kh; ++ky)
      for (size_t kx = 0; kx < g_.kw; ++kx)
        *o++ = c * plane + ky * g_.dh * row_bytes + (kx * g_.dw % g_.sw) * cols() + kx * g_.dw / g_.sw;
}

void QConvPaddedRows::fill(const PlaneRowsOf<const uint8_t>& x, size_t rows_end, size_t c0, size_t c1, size_t oy0,
                           size_t oy1, uint8_t* buf) const {
  const Conv2dGeometry& g = g_;
  const size_t nrows = rows(oy1 - oy0), plane = plane_bytes(oy1 - oy0), ncols = cols();
  const ptrdiff_t first = static_cast<ptrdiff_t>(oy0 * g.sh) - static_cast<ptrdiff_t>(g.pad_top);
  const uint8_t pad = pad_;
  const ptrdiff_t wi = static_cast<ptrdiff_t>(g.w), sw = static_cast<ptrdiff_t>(g.sw);
  const ptrdiff_t n = static_cast<ptrdiff_t>(ncols);
  // Bytes the stride-2 loads may read from image row iy on: the rows x holds, through rows_end.
  [[maybe_unused]] const ptrdiff_t held = static_cast<ptrdiff_t>(rows_end);  // x86-64 loads only
  // Per phase (the same for every row): whether a tap reads it, and the columns j in [j0, j1)
  // that read input ix = j * sw + ph - pad_left inside the row.
  struct Phase {
    bool read;
    ptrdiff_t ix0, j0, j1;
  };
  auto make_phase = [&](ptrdiff_t ph) {
    Phase f;
    f.read = phase_read(g, static_cast<size_t>(ph));
    f.ix0 = ph - static_cast<ptrdiff_t>(g.pad_left);
    f.j0 = std::min(n, f.ix0 >= 0 ? 0 : (-f.ix0 + sw - 1) / sw);
    f.j1 = std::max(f.j0, std::min(n, f.ix0 < wi ? (wi - 1 - f.ix0) / sw + 1 : 0));
    return f;
  };
  constexpr ptrdiff_t kTable = static_cast<ptrdiff_t>(kMaxPhases);
  Phase phases[kMaxPhases];
  for (ptrdiff_t ph = 0; ph < std::min(sw, kTable); ++ph) phases[ph] = make_phase(ph);
  const ptrdiff_t height = static_cast<ptrdiff_t>(g.h);
  if (sw == 1) {  // one phase, read by every tap: the loop below without its per-phase work
    const ptrdiff_t ix0 = phases[0].ix0, j0 = phases[0].j0, j1 = phases[0].j1;
    for (size_t c = c0; c < c1; ++c) {
      uint8_t* dst = buf + c * plane;
      for (size_t r = 0; r < nrows; ++r, dst += ncols) {
        if (g.sh > 1 && !row_read(g, r)) continue;
        const ptrdiff_t iy = first + static_cast<ptrdiff_t>(r);
        if (iy < 0 || iy >= height) {
          fill_short(dst, pad, ncols);
          continue;
        }
        fill_short(dst, pad, static_cast<size_t>(j0));
        copy_short(dst + j0, x.row(c, static_cast<size_t>(iy)) + ix0 + j0, static_cast<size_t>(j1 - j0));
        fill_short(dst + j1, pad, static_cast<size_t>(n - j1));
      }
    }
    return;
  }
  for (size_t c = c0; c < c1; ++c) {
    uint8_t* dst = buf + c * plane;
    for (size_t r = 0; r < nrows; ++r) {
      if (g.sh > 1 && !row_read(g, r)) {
        dst += g.sw * ncols;
        continue;
      }
      const ptrdiff_t iy = first + static_cast<ptrdiff_t>(r);
      for (ptrdiff_t ph = 0; ph < sw; ++ph, dst += ncols) {
        const Phase f = ph < kTable ? phases[ph] : make_phase(ph);
        if (!f.read) continue;  // e.g. the odd columns of a 1x1 stride 2
        if (iy < 0 || iy >= height) {
          fill_short(dst, pad, ncols);
          continue;
        }
        const uint8_t* row = x.row(c, static_cast<size_t>(iy));
        const ptrdiff_t ix0 = f.ix0, j0 = f.j0, j1 = f.j1;
        fill_short(dst, pad, static_cast<size_t>(j0));
        ptrdiff_t j = j0;
#if defined(__x86_64__)
        if (sw == 2) {
          // The even bytes of 32, 16 at a time, while the loads stay inside the rows x holds
          // (they may run into the next rows: those bytes land in columns >= j1, which the
          // fill below rewrites, or are not stored at all past the phase row).
          const __m128i even = _mm_set1_epi16(0x00FF);
          const ptrdiff_t readable = (held - iy) * wi;  // from row
          for (; j < j1 && ix0 + 2 * j + 32 <= readable; j += 16) {
            const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + ix0 + 2 * j));
            const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + ix0 + 2 * j + 16));
            const __m128i v = _mm_packus_epi16(_mm_and_si128(a, even), _mm_and_si128(b, even));
            if (j + 16 <= n) {
              _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), v);
            } else {
              alignas(16) uint8_t tmp[16];
              _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
              std::memcpy(dst + j, tmp, static_cast<size_t>(j1 - j));
            }
          }
          j = std::min(j, j1);
        }
#endif
        for (; j < j1; ++j) dst[j] = row[ix0 + j * sw];
        fill_short(dst + j1, pad, static_cast<size_t>(n - j1));
      }
    }
  }
}

size_t QConvPaddedRows::panel_runs(size_t q0, size_t n, kernels::Qu8WxRun* runs) const {
  const size_t row_bytes = g_.sw * cols();  // one padded row, all phases
  size_t count = 0;
  for (size_t q = q0; q < q0 + n; ++count) {
    const size_t oy = q / g_.wo, ox0 = q % g_.wo;
    const size_t seg = std::min(g_.wo - ox0, q0 + n - q);
    runs[count] = {static_cast<uint32_t>(q - q0), static_cast<uint32_t>(oy * g_.sh * row_bytes + ox0),
                   static_cast<uint32_t>(seg)};
    q += seg;
  }
  return count;
}

void QConvPaddedRows::pack_panel(const kernels::Qu8WxConfig& cfg, const size_t* offsets, size_t q0, size_t n,
                                 const uint8_t* buf, uint8_t* out) const {
  kernels::Qu8WxRun runs[kMaxRuns];
  const size_t count = panel_runs(q0, n, runs);
  kernels::qu8_wxgemm_pack_x_runs(cfg, k_, n, buf, offsets, runs, count, x_signed_, out);
}

void QConvPaddedRows::quad_offsets(size_t out_rows, size_t* o) const {
  const size_t quads = channels_ / 4, plane4 = 4 * plane_bytes(out_rows), ncols = cols();
  for (size_t ky = 0; ky < g_.kh; ++ky)
    for (size_t kx = 0; kx < g_.kw; ++kx)
      for (size_t q = 0; q < quads; ++q) *o++ = q * plane4 + 4 * (ky * g_.dh * ncols + kx * g_.dw);
}

namespace {

// out[4 j + i] = row_i[j] ^ flip for j < n: four channels' bytes interleaved per pixel.
void interleave4(const uint8_t* const* row, size_t n, uint8_t flip, uint8_t* out) {
  size_t j = 0;
#if defined(__x86_64__)
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  for (; j + 16 <= n; j += 16) {
    const __m128i a = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[0] + j)), f);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[1] + j)), f);
    const __m128i c = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[2] + j)), f);
    const __m128i d = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[3] + j)), f);
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    __m128i* dst = reinterpret_cast<__m128i*>(out + 4 * j);
    _mm_storeu_si128(dst, _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
  }
#endif
  for (; j < n; ++j)
    for (size_t i = 0; i < 4; ++i) out[4 * j + i] = static_cast<uint8_t>(row[i][j] ^ flip);
}

}  // namespace

void QConvPaddedRows::fill_quads(const PlaneRowsOf<const uint8_t>& x, size_t q0, size_t q1, size_t oy0, size_t oy1,
                                 uint8_t* buf) const {
  const Conv2dGeometry& g = g_;
  const size_t nrows = rows(oy1 - oy0), plane4 = 4 * plane_bytes(oy1 - oy0), ncols = cols();
  const uint8_t flip = x_signed_ ? 0x80 : 0, pad = static_cast<uint8_t>(pad_ ^ flip);
  const ptrdiff_t first = static_cast<ptrdiff_t>(oy0 * g.sh) - static_cast<ptrdiff_t>(g.pad_top);
  // Columns j in [j0, j1) read input column j - pad_left inside the row.
  const size_t j0 = std::min(ncols, g.pad_left);
  const size_t j1 = std::max(j0, std::min(ncols, g.w + g.pad_left));
  for (size_t q = q0; q < q1; ++q) {
    uint8_t* dst = buf + q * plane4;
    for (size_t r = 0; r < nrows; ++r, dst += 4 * ncols) {
      if (g.sh > 1 && !row_read(g, r)) continue;
      const ptrdiff_t iy = first + static_cast<ptrdiff_t>(r);
      if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h)) {
        std::memset(dst, pad, 4 * ncols);
        continue;
      }
      std::memset(dst, pad, 4 * j0);
      if (j1 > j0) {
        const uint8_t* src[4];
        for (size_t i = 0; i < 4; ++i) src[i] = x.row(4 * q + i, static_cast<size_t>(iy)) + (j0 - g.pad_left);
        interleave4(src, j1 - j0, flip, dst + 4 * j0);
      }
      std::memset(dst + 4 * j1, pad, 4 * (ncols - j1));
    }
  }
}

void QConvPaddedRows::pack_panel_quads(const kernels::Qu8WxConfig& cfg, const size_t* offsets, size_t q0, size_t n,
                                       const uint8_t* buf, uint8_t* out) const {
  kernels::Qu8WxRun runs[kMaxRuns];
  const size_t count = panel_runs(q0, n, runs);
  const size_t nr = cfg.nr, groups = k_ / 4;
  if (count == 1 && n == 32 && nr == 32) {  // a whole panel from one output row: fixed-size copies
    const size_t src = 4 * size_t{runs[0].src};
    for (size_t kg = 0; kg < groups; ++kg) std::memcpy(out + kg * 128, buf + offsets[kg] + src, 128);
    return;
  }
  for (size_t kg = 0; kg < groups; ++kg) {
    uint8_t* dst = out + kg * nr * 4;
    for (size_t i = 0; i < count; ++i)
      std::memcpy(dst + 4 * size_t{runs[i].col}, buf + offsets[kg] + 4 * size_t{runs[i].src}, 4 * size_t{runs[i].len});
    if (n < nr) std::memset(dst + 4 * n, 0, 4 * (nr - n));
  }
}

}  // namespace nfuse::backends::cpu
