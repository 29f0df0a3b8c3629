// ConvTranspose whose taps do not overlap: kernel == stride, no padding or dilation, group 1,
// output exactly input * stride (the 2x2 stride-2 deconvolutions of segmentation and
// text-detection heads). Output row oy = iy * s + ky then reads input row iy alone, and the
// output rows of one tap row ky form a GEMM
//
//   col[(co, kx)][pixels of rows iy] = sum_ci W[ci][co][ky][kx] * X[ci][pixels]
//
// whose columns go straight to y[co][iy * s + ky][ix * s + kx], bias and activation included
// (input rows whose every tap row is wanted run all tap rows as one GEMM, reading X once):
// one write of the output, where the general GEMM + col2im path fills it with the bias, adds
// the taps into it and activates it in three passes. Any range of output rows can be computed
// on its own (cpu_conv_transpose.cpp runs bands of them, the fusion backend strips), and no
// input row's taps are computed twice.
#pragma once

#include <cstddef>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::cpu {

class UpsampleDeconv {
 public:
  static bool applies(const ops::ConvGeometry& g);
  // False when memory runs out. The panels are packed through `packs` when given (a context
  // binary's are then read in place, and `weight`'s bytes not at all); `weight` is w's value.
  bool init(const ops::ConvGeometry& g, const ir::Tensor& w, const ir::Tensor* bias, const Activation& act,
            bool residual, PackStore* packs = nullptr, const ir::Value* weight = nullptr);
  // Floats of scratch run() needs for `out_rows` output rows.
  size_t scratch_floats(size_t out_rows) const;
  // Input rows [lo, hi) that output rows [y0, y1) read.
  void input_rows(size_t y0, size_t y1, size_t* lo, size_t* hi) const;
  // Output rows [y0, y1) of one image; r: the residual at the output's positions, when fused.
  void run(const ConstPlaneRows& x, const PlaneRows& y, const ConstPlaneRows* r, size_t y0, size_t y1, float* ws) const;

 private:
  // col (ws, m rows of the pixels of input rows [iy, iy + rows)) = A * X, bias and clamp included.
  void gemm(const ConstPlaneRows& x, const float* a_panels, const float* bias, size_t m, size_t iy, size_t rows,
            float* ws) const;
  void scatter(const PlaneRows& y, const ConstPlaneRows* r, size_t ky, size_t iy, size_t rows, const float* col,
               size_t np) const;

  const kernels::F32GemmConfig* cfg_ = nullptr;
  Activation act_;
  bool residual_ = false;
  size_t ci_ = 0, co_ = 0, h_ = 0, w_ = 0, wo_ = 0;
  size_t s_ = 1, kw_ = 1, m_ = 0, kc_ = 0, chunk_rows_ = 1, all_chunk_rows_ = 1;
  size_t panels_ = 0, all_panels_ = 0;
  std::vector<float> all_bias_;  // per GEMM row (ky, co, kx); its first m_ serve every tap row
  // All tap rows' panels (rows (ky, co, kx)), then each tap row's A_ky panels alone.
  PackedFloats packed_;
  const float* all_panels() const { return packed_.data(); }
  const float* tap_panels(size_t ky) const { return packed_.data() + (all_panels_ + ky * panels_) * cfg_->mr * ci_; }
};

}  // namespace nfuse::backends::cpu
