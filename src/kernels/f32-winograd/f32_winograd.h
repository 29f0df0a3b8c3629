// FP32 Winograd F(4x4, 3x3) transforms: the kernel family under 3x3 stride-1 convolutions where
// the cpu backend chooses Winograd (src/backends/cpu/cpu_winograd_conv.cpp). A 6x6 input tile d
// gives a 4x4 output tile
//
//   Y = A^T [ sum_ci (G g G^T)[ci] (.) (B^T d[ci] B) ] A
//
// so the 36 element positions xi = 6*i + j of the transformed tiles become 36 independent GEMMs
// (output channels x input channels x tiles) with 36 multiplies per 16 outputs per channel pair
// instead of 144: 4x fewer than a direct or im2col convolution. What it costs: the input and
// output transforms below (linear in channels, not quadratic) and about 4x larger weights.
//
// Both transforms work on one tile row of one channel and vectorise across tiles: the input rows
// are first split into their 4 column phases (x mod 4), so the k-th column of every tile is one
// contiguous array and each step of the transform is a plain loop over tiles. The same source
// (f32_winograd_impl.h) is compiled once per ISA; the compiler vectorises those loops for it.
//
// Kernels (hot code: no allocation, no checks beyond the documented preconditions):
//   f32_wino43_input__scalar / __avx2 / __avx512    input tile transform, B^T d B
//   f32_wino43_output__scalar / __avx2 / __avx512   output transform A^T M A + bias, residual, clamp
//   f32_wino43_weights                              G g G^T, prepare time (double precision)
#pragma once

#include <cstddef>
#include <limits>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

inline constexpr size_t kWino43Tile = 4;     // output tile edge
inline constexpr size_t kWino43Points = 36;  // 6 x 6 transformed positions

// Input transform of one channel for `count` tiles of one tile row, tiles tx0 .. tx0+count-1.
// Tile tx reads input columns [4*tx - pad_left, 4*tx - pad_left + 6) of the six rows.
struct F32Wino43InputArgs {
  const float* rows[6] = {};  // input rows 4*ty - pad_top + r; nullptr: outside the image (zeros)
  size_t width = 0;           // input row length; columns outside [0, width) read as zero
  size_t pad_left = 0;
  size_t tx0 = 0, count = 0;  // count >= 1
  // Out: position xi of tile t goes to column col = col0 + t of v[xi * v_stride + ...], laid out
  // as the GEMM's B panels: panel col / panel_width at (col / panel_width) * panel_stride, offset
  // col % panel_width in it. panel_width = 0: one plain row, v[xi * v_stride + col].
  float* v = nullptr;
  size_t v_stride = 0;
  size_t col0 = 0;
  size_t panel_width = 0, panel_stride = 0;
  float* workspace = nullptr;  // f32_wino43_input_workspace_floats(count) floats
};

// Output transform of one output channel for `count` tiles of one tile row: writes output rows
// 4*ty + a for a < out_rows, columns [4*tx0, min(width, 4*(tx0+count))) as
//   y = clamp(Y + bias + residual, min, max)
struct F32Wino43OutputArgs {
  const float* m = nullptr;  // m[xi * m_stride + t]: the 36 GEMM results per tile
  size_t m_stride = 0;
  size_t tx0 = 0, count = 0;  // count >= 1
  float* rows[4] = {};        // output rows (the first out_rows are written)
  const float* residual_rows[4] = {};  // same geometry as rows, or all nullptr
  size_t out_rows = 4;        // 1..4: rows past the output's bottom edge are not written
  size_t width = 0;           // output row length
  float bias = 0.0f;
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  float* workspace = nullptr;  // f32_wino43_output_workspace_floats(count) floats
};

using F32Wino43InputFn = void (*)(const F32Wino43InputArgs& args);
using F32Wino43OutputFn = void (*)(const F32Wino43OutputArgs& args);

size_t f32_wino43_input_workspace_floats(size_t count);
size_t f32_wino43_output_workspace_floats(size_t count);

void f32_wino43_input__scalar(const F32Wino43InputArgs& args);
void f32_wino43_output__scalar(const F32Wino43OutputArgs& args);
#if defined(__x86_64__)
void f32_wino43_input__avx2(const F32Wino43InputArgs& args);
void f32_wino43_output__avx2(const F32Wino43OutputArgs& args);
void f32_wino43_input__avx512(const F32Wino43InputArgs& args);
void f32_wino43_output__avx512(const F32Wino43OutputArgs& args);
#endif

struct F32Wino43Kernels {
  F32Wino43InputFn input = nullptr;
  F32Wino43OutputFn output = nullptr;
};
// The transforms for `isa` (falling back to scalar where that ISA has none). Never null members.
F32Wino43Kernels f32_wino43_kernels(Isa isa);

// Transforms one 3x3 filter g (row-major) into its 36 positions: u[xi * u_stride] for xi in
// [0, 36), u = G g G^T computed in double and rounded once.
void f32_wino43_weights(const float* g, float* u, size_t u_stride);

}  // namespace nfuse::kernels
