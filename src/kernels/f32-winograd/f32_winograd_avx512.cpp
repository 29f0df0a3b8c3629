// F(4,3) transforms for AVX-512F. The output transform is the shared loops of
// f32_winograd_impl.h compiled with this file's flags; the input transform is written with
// intrinsics, 16 tiles per step: splitting each input row into its column phases (x mod 4) is
// four two-source permutes per row here, where the compiler's generic strided loop was slower
// than the scalar build.
#if defined(__x86_64__)
#define NFUSE_WINO_ISA_NS wino_avx512
#include "kernels/f32-winograd/f32_winograd_impl.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as unused merge sources, which
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace nfuse::kernels {
namespace {

constexpr size_t kLanes = 16;
constexpr size_t kSpan = 4 * kLanes + 2;  // input columns 16 tiles read

// d[c][t] = x[4t + c] for tiles t < 16, columns c < 6, from x[0, 64) in z0..z3 and x[64], x[65].
inline void phases_from(__m512 z0, __m512 z1, __m512 z2, __m512 z3, float x64, float x65, __m512 d[6]) {
  for (int c = 0; c < 4; ++c) {
    // Lanes 0-7 pick 4t + c from (z0, z1), lanes 8-15 pick 4(t - 8) + c from (z2, z3).
    const __m512i idx = _mm512_setr_epi32(c, 4 + c, 8 + c, 12 + c, 16 + c, 20 + c, 24 + c, 28 + c, c, 4 + c, 8 + c,
                                          12 + c, 16 + c, 20 + c, 24 + c, 28 + c);
    d[c] = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(z0, idx, z1), _mm512_permutex2var_ps(z2, idx, z3));
  }
  // Columns 4 and 5 of tile t are columns 0 and 1 of tile t + 1.
  d[4] = _mm512_castsi512_ps(
      _mm512_alignr_epi32(_mm512_castps_si512(_mm512_set1_ps(x64)), _mm512_castps_si512(d[0]), 1));
  d[5] = _mm512_castsi512_ps(
      _mm512_alignr_epi32(_mm512_castps_si512(_mm512_set1_ps(x65)), _mm512_castps_si512(d[1]), 1));
}

// d[c][t] = x[4t + c] for tiles t < 16, columns c < 6 (reads x[0, 66)).
inline void load_phases(const float* x, __m512 d[6]) {
  phases_from(_mm512_loadu_ps(x), _mm512_loadu_ps(x + 16), _mm512_loadu_ps(x + 32), _mm512_loadu_ps(x + 48), x[64],
              x[65], d);
}

// load_phases for a window that crosses the row's ends: columns x0 + i for i < 66, zero outside
// [0, width). Masked loads read the row in place; copying it into a stack window first made every
// load of that window wait for stores it could not forward from.
inline void load_phases_clipped(const float* row, long long x0, long long width, __m512 d[6]) {
  // Lanes i of the 16 columns from x0 + off that lie inside the row.
  auto mask = [&](long long off) {
    const long long lo = std::clamp(-(x0 + off), 0LL, 16LL), hi = std::clamp(width - (x0 + off), 0LL, 16LL);
    return static_cast<__mmask16>(hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u);
  };
  // The address of column x0 + off, formed as an integer: it may lie before the row, and only
  // the mask's lanes are read.
  auto at = [&](long long off) {
    return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>((x0 + off) * 4));
  };
  const __m512 z0 = _mm512_maskz_loadu_ps(mask(0), at(0)), z1 = _mm512_maskz_loadu_ps(mask(16), at(16));
  const __m512 z2 = _mm512_maskz_loadu_ps(mask(32), at(32)), z3 = _mm512_maskz_loadu_ps(mask(48), at(48));
  auto scalar = [&](long long off) { return x0 + off >= 0 && x0 + off < width ? row[x0 + off] : 0.0f; };
  phases_from(z0, z1, z2, z3, scalar(64), scalar(65), d);
}

// The 1-D B^T transform (see input_1d in f32_winograd_impl.h) on registers.
inline void transform(const __m512 d[6], __m512 o[6]) {
  const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f);
  const __m512 a = _mm512_fnmadd_ps(four, d[2], d[4]);
  const __m512 b = _mm512_fnmadd_ps(four, d[1], d[3]);
  const __m512 c = _mm512_sub_ps(d[4], d[2]);
  const __m512 e = _mm512_mul_ps(two, _mm512_sub_ps(d[3], d[1]));
  o[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
  o[1] = _mm512_add_ps(a, b);
  o[2] = _mm512_sub_ps(a, b);
  o[3] = _mm512_add_ps(c, e);
  o[4] = _mm512_sub_ps(c, e);
  o[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}

// Where lanes [0, cnt) of a vector go: columns col .. col + cnt of row xi, split at a panel
// boundary (panel_width >= 16, so at most one).
class ColumnStore {
 public:
  ColumnStore(const F32Wino43InputArgs& p, size_t col, size_t cnt) : stride_(p.v_stride) {
    const size_t pw = p.panel_width;
    const size_t first = pw == 0 ? cnt : std::min(cnt, pw - col % pw);
    v1_ = p.v + (pw == 0 ? col : (col / pw) * p.panel_stride + col % pw);
    m1_ = static_cast<__mmask16>((1u << first) - 1u);
    split_ = first != cnt;
    if (!split_) return;
    v2_ = p.v + (col / pw + 1) * p.panel_stride;
    m2_ = static_cast<__mmask16>((1u << (cnt - first)) - 1u);
    shift_ = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32(static_cast<int>(first)));
  }
  void put(size_t xi, __m512 v) const {
    _mm512_mask_storeu_ps(v1_ + xi * stride_, m1_, v);
    if (split_) _mm512_mask_storeu_ps(v2_ + xi * stride_, m2_, _mm512_permutexvar_ps(shift_, v));
  }

 private:
  size_t stride_;
  float* v1_ = nullptr;
  float* v2_ = nullptr;
  __mmask16 m1_ = 0, m2_ = 0;
  bool split_ = false;
  __m512i shift_ = _mm512_setzero_si512();
};

void input_transform(const F32Wino43InputArgs& p) {
  if (p.panel_width != 0 && p.panel_width < kLanes) return wino_avx512::input_transform(p);
  const long long width = static_cast<long long>(p.width);
  // d B of the six input rows, through L1: the row pass writes it, the column pass reads it back
  // a column at a time. Kept in registers, its 36 vectors and the 36 results spilled anyway, in an
  // order that stalled on them.
  alignas(64) float rows[6][6][kLanes];
  for (size_t t0 = 0; t0 < p.count; t0 += kLanes) {
    const size_t cnt = std::min(kLanes, p.count - t0);
    const long long x0 = static_cast<long long>(4 * (p.tx0 + t0)) - static_cast<long long>(p.pad_left);
    const bool inside = x0 >= 0 && x0 + static_cast<long long>(kSpan) <= width;
    for (size_t r = 0; r < 6; ++r) {
      __m512 d[6], o[6];
      if (p.rows[r] == nullptr) {
        for (size_t j = 0; j < 6; ++j) _mm512_store_ps(rows[r][j], _mm512_setzero_ps());
        continue;
      }
      if (inside) {
        load_phases(p.rows[r] + x0, d);
      } else {
        load_phases_clipped(p.rows[r], x0, width, d);
      }
      transform(d, o);
      for (size_t j = 0; j < 6; ++j) _mm512_store_ps(rows[r][j], o[j]);
    }
    const ColumnStore out(p, p.col0 + t0, cnt);
    for (size_t j = 0; j < 6; ++j) {
      __m512 col[6], t[6];
      for (size_t r = 0; r < 6; ++r) col[r] = _mm512_load_ps(rows[r][j]);
      transform(col, t);
      for (size_t i = 0; i < 6; ++i) out.put(i * 6 + j, t[i]);
    }
  }
}

}  // namespace

void f32_wino43_input__avx512(const F32Wino43InputArgs& args) { input_transform(args); }
void f32_wino43_output__avx512(const F32Wino43OutputArgs& args) { wino_avx512::output_transform(args); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
