// The F(4x4, 3x3) transforms as plain loops over tiles, included once per ISA by
// f32_winograd_{scalar,avx2,avx512}.cpp (each compiled with its own flags) inside a namespace of
// its own, so every ISA gets its own vectorised copy of the same source. No intrinsics: each
// loop walks contiguous arrays indexed by tile, which GCC and Clang vectorise at -O2/-O3.
//
// B^T (input), A^T (output) and G (weights) are the standard F(4,3) matrices for the points
// 0, +-1, +-2 (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
#include <algorithm>
#include <cstddef>

#include "kernels/f32-winograd/f32_winograd.h"

namespace nfuse::kernels::NFUSE_WINO_ISA_NS {

// o = d B for six rows of phases (d0..d5 of tile t are d[k][t]); the 1-D transform
//   o0 = 4 d0 - 5 d2 + d4          o3 = (d4 - d2) + 2 (d3 - d1)
//   o1 = (d4 - 4 d2) + (d3 - 4 d1) o4 = (d4 - d2) - 2 (d3 - d1)
//   o2 = (d4 - 4 d2) - (d3 - 4 d1) o5 = 4 d1 - 5 d3 + d5
inline void input_1d(const float* __restrict d0, const float* __restrict d1, const float* __restrict d2,
                     const float* __restrict d3, const float* __restrict d4, const float* __restrict d5,
                     float* __restrict o0, float* __restrict o1, float* __restrict o2, float* __restrict o3,
                     float* __restrict o4, float* __restrict o5, size_t n) {
  for (size_t t = 0; t < n; ++t) {
    const float a = d4[t] - 4.0f * d2[t];
    const float b = d3[t] - 4.0f * d1[t];
    const float c = d4[t] - d2[t];
    const float e = 2.0f * (d3[t] - d1[t]);
    o0[t] = 4.0f * d0[t] - 5.0f * d2[t] + d4[t];
    o1[t] = a + b;
    o2[t] = a - b;
    o3[t] = c + e;
    o4[t] = c - e;
    o5[t] = 4.0f * d1[t] - 5.0f * d3[t] + d5[t];
  }
}

// The 1-D output transform of six values to four:
//   y0 = m0 + (m1 + m2) + (m3 + m4)     y2 = (m1 + m2) + 4 (m3 + m4)
//   y1 = (m1 - m2) + 2 (m3 - m4)        y3 = (m1 - m2) + 8 (m3 - m4) + m5
inline void output_1d(const float* __restrict m0, const float* __restrict m1, const float* __restrict m2,
                      const float* __restrict m3, const float* __restrict m4, const float* __restrict m5,
                      float* __restrict y0, float* __restrict y1, float* __restrict y2, float* __restrict y3,
                      size_t n) {
  for (size_t t = 0; t < n; ++t) {
    const float s12 = m1[t] + m2[t], d12 = m1[t] - m2[t];
    const float s34 = m3[t] + m4[t], d34 = m3[t] - m4[t];
    y0[t] = m0[t] + s12 + s34;
    y1[t] = d12 + 2.0f * d34;
    y2[t] = s12 + 4.0f * s34;
    y3[t] = d12 + 8.0f * d34 + m5[t];
  }
}

// Splits one row into its four column phases for tiles [0, np): q_c[t] = row[x0 + 4t + c], zero
// outside [0, width). Tiles whose four columns are all inside the row read it directly (a
// strided loop the compiler vectorises); only the edge tiles take the bounds-checked path.
inline void split_phases(const float* row, long long x0, long long width, size_t np, float* __restrict q0,
                         float* __restrict q1, float* __restrict q2, float* __restrict q3) {
  const long long n = static_cast<long long>(np);
  const long long t_lo = std::clamp(x0 >= 0 ? 0LL : (-x0 + 3) / 4, 0LL, n);
  const long long t_hi = std::clamp(width - x0 >= 4 ? (width - x0 - 4) / 4 + 1 : 0LL, t_lo, n);
  auto at = [&](long long x) { return x >= 0 && x < width ? row[x] : 0.0f; };
  for (long long t = 0; t < t_lo; ++t) {
    q0[t] = at(x0 + 4 * t), q1[t] = at(x0 + 4 * t + 1), q2[t] = at(x0 + 4 * t + 2), q3[t] = at(x0 + 4 * t + 3);
  }
  const float* __restrict r = row + x0;
  for (long long t = t_lo; t < t_hi; ++t) {
    q0[t] = r[4 * t];
    q1[t] = r[4 * t + 1];
    q2[t] = r[4 * t + 2];
    q3[t] = r[4 * t + 3];
  }
  for (long long t = t_hi; t < n; ++t) {
    q0[t] = at(x0 + 4 * t), q1[t] = at(x0 + 4 * t + 1), q2[t] = at(x0 + 4 * t + 2), q3[t] = at(x0 + 4 * t + 3);
  }
}

inline void input_transform(const F32Wino43InputArgs& p) {
  const size_t n = p.count;
  const size_t np = n + 1;        // phase arrays hold one extra tile: columns 4 and 5 of tile t
  float* phase = p.workspace;     // [6 rows][4 phases][np]
  float* rowt = phase + 24 * np;  // [6 rows][6 columns][n]: d B
  const long long x0 = static_cast<long long>(4 * p.tx0) - static_cast<long long>(p.pad_left);
  for (size_t r = 0; r < 6; ++r) {
    float* ph = phase + r * 4 * np;
    if (p.rows[r] == nullptr) {
      std::fill(ph, ph + 4 * np, 0.0f);
    } else {
      split_phases(p.rows[r], x0, static_cast<long long>(p.width), np, ph, ph + np, ph + 2 * np, ph + 3 * np);
    }
    // Columns 0..5 of tile t are phases 0..3 at t and phases 0, 1 at t + 1.
    float* o = rowt + r * 6 * n;
    input_1d(ph, ph + np, ph + 2 * np, ph + 3 * np, ph + 1, ph + np + 1, o, o + n, o + 2 * n, o + 3 * n,
             o + 4 * n, o + 5 * n, n);
  }
  // B^T (d B): the same 1-D transform down the six rows, column by column, one panel's run of
  // columns at a time.
  const size_t pw = p.panel_width == 0 ? n + p.col0 + 1 : p.panel_width;
  const size_t is = 6 * p.v_stride;  // next i
  for (size_t t0 = 0; t0 < n;) {
    const size_t col = p.col0 + t0;
    const size_t len = std::min(n - t0, pw - col % pw);
    float* v = p.v + (p.panel_width == 0 ? col : (col / pw) * p.panel_stride + col % pw);
    for (size_t j = 0; j < 6; ++j) {
      const float* c = rowt + j * n + t0;
      const size_t rs = 6 * n;  // next row, same column
      float* vj = v + j * p.v_stride;
      input_1d(c, c + rs, c + 2 * rs, c + 3 * rs, c + 4 * rs, c + 5 * rs, vj, vj + is, vj + 2 * is, vj + 3 * is,
               vj + 4 * is, vj + 5 * is, len);
    }
    t0 += len;
  }
}

inline void output_transform(const F32Wino43OutputArgs& p) {
  const size_t n = p.count;
  float* q = p.workspace;  // [4 a][6 j][n]: A^T M
  float* o = q + 24 * n;   // [4 a][4 b][n]: (A^T M) A
  for (size_t j = 0; j < 6; ++j) {
    const float* m = p.m + j * p.m_stride;
    const size_t is = 6 * p.m_stride;
    float* qj = q + j * n;
    const size_t as = 6 * n;
    output_1d(m, m + is, m + 2 * is, m + 3 * is, m + 4 * is, m + 5 * is, qj, qj + as, qj + 2 * as, qj + 3 * as, n);
  }
  for (size_t a = 0; a < 4; ++a) {
    const float* qa = q + a * 6 * n;
    float* oa = o + a * 4 * n;
    output_1d(qa, qa + n, qa + 2 * n, qa + 3 * n, qa + 4 * n, qa + 5 * n, oa, oa + n, oa + 2 * n, oa + 3 * n, n);
  }
  // Interleave the four column phases back into rows, adding bias and residual and clamping.
  const size_t x0 = 4 * p.tx0;
  const size_t x_end = std::min(p.width, 4 * (p.tx0 + n));
  const size_t full = x_end > x0 ? (x_end - x0) / 4 : 0;  // tiles whose four columns are all inside
  const float bias = p.bias, lo = p.min, hi = p.max;
  for (size_t a = 0; a < p.out_rows; ++a) {
    const float* __restrict o0 = o + a * 4 * n;
    const float* __restrict o1 = o0 + n;
    const float* __restrict o2 = o0 + 2 * n;
    const float* __restrict o3 = o0 + 3 * n;
    float* __restrict y = p.rows[a] + x0;
    const float* __restrict r = p.residual_rows[a] != nullptr ? p.residual_rows[a] + x0 : nullptr;
    if (r != nullptr) {
      for (size_t t = 0; t < full; ++t) {
        y[4 * t] = std::min(std::max(o0[t] + bias + r[4 * t], lo), hi);
        y[4 * t + 1] = std::min(std::max(o1[t] + bias + r[4 * t + 1], lo), hi);
        y[4 * t + 2] = std::min(std::max(o2[t] + bias + r[4 * t + 2], lo), hi);
        y[4 * t + 3] = std::min(std::max(o3[t] + bias + r[4 * t + 3], lo), hi);
      }
    } else {
      for (size_t t = 0; t < full; ++t) {
        y[4 * t] = std::min(std::max(o0[t] + bias, lo), hi);
        y[4 * t + 1] = std::min(std::max(o1[t] + bias, lo), hi);
        y[4 * t + 2] = std::min(std::max(o2[t] + bias, lo), hi);
        y[4 * t + 3] = std::min(std::max(o3[t] + bias, lo), hi);
      }
    }
    for (size_t x = x0 + 4 * full; x < x_end; ++x) {  // the right edge's partial tile
      const size_t t = (x - x0) / 4, b = (x - x0) % 4;
      const float v = o0[b * n + t] + bias + (r != nullptr ? r[x - x0] : 0.0f);
      y[x - x0] = std::min(std::max(v, lo), hi);
    }
  }
}

}  // namespace nfuse::kernels::NFUSE_WINO_ISA_NS
