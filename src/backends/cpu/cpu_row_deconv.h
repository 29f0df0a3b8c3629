// ConvTranspose by ranges of output rows, for any 2-D geometry: overlapping taps, padding,
// dilation, output padding, groups. Output row oy receives tap row ky of input row iy exactly
// when oy = iy * sh + ky * dh - pad_top, so for each tap row ky the output rows of a range that
// it reaches take consecutive input rows, and
//
//   col[(co, kx)][pixels of those input rows] = sum_ci W[ci][co][ky][kx] * X[ci][pixels]
//
// is one GEMM whose rows are added into their output rows at columns ix * sw + kx * dw - pad_left.
// Each (input row, tap row) pair reaches exactly one output row, so ranges computed separately
// (the fusion backend's strips) compute no tap twice, however much the taps overlap; the cost is
// one output-row pass per tap row (bias first, residual and activation last). The cpu op keeps
// its whole-plane GEMM + col2im (cpu_conv_transpose.cpp); kernel == stride upsamplings go to
// UpsampleDeconv, which writes every output once.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::cpu {

// col (m rows of the rows * width pixels of input rows [iy, iy + rows), row stride rows * width)
// = A * X over K = x's channels [0, k) in blocks of kc, with `ep` (row_bias: per row of A, or
// nullptr). Full NR-wide panels are read straight from x's rows (a channel's rows are contiguous
// in the arena and in line buffers); the last partial panel is packed behind col, so ws holds
// m * rows * width + kc * NR floats.
void deconv_gemm(const kernels::F32GemmConfig& cfg, const ConstPlaneRows& x, size_t k, size_t kc, size_t width,
                 const float* a_panels, size_t m, size_t iy, size_t rows, kernels::F32GemmEpilogue ep,
                 const float* row_bias, float* ws);

class RowDeconv {
 public:
  // False when memory runs out. Packed through `packs` when given, as UpsampleDeconv::init.
  bool init(const ops::ConvGeometry& g, const ir::Tensor& w, const ir::Tensor* bias, const Activation& act,
            bool residual, PackStore* packs = nullptr, const ir::Value* weight = nullptr);
  size_t scratch_floats(size_t out_rows) const;
  // Input rows [lo, hi) that output rows [y0, y1) read.
  void input_rows(size_t y0, size_t y1, size_t* lo, size_t* hi) const;
  // Output rows [y0, y1) of one image; r: the residual at the output's positions, when fused.
  void run(const ConstPlaneRows& x, const PlaneRows& y, const ConstPlaneRows* r, size_t y0, size_t y1, float* ws) const;

 private:
  // Input rows [lo, hi) whose tap row ky lands in output rows [y0, y1).
  void tap_rows(size_t ky, size_t y0, size_t y1, size_t* lo, size_t* hi) const;

  const kernels::F32GemmConfig* cfg_ = nullptr;
  Activation act_;
  bool residual_ = false;
  size_t group_ = 1, cig_ = 0, cog_ = 0, h_ = 0, w_ = 0, ho_ = 0, wo_ = 0;
  size_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, pad_top_ = 0;
  int64_t pad_left_ = 0;
  size_t m_ = 0, kc_ = 0, panels_ = 0, chunk_rows_ = 1;
  std::vector<float> bias_;  // per output channel (zeros without one)
  PackedFloats packed_;      // per group and tap row: A panels, rows (co, kx), K = cig
};

}  // namespace nfuse::backends::cpu
