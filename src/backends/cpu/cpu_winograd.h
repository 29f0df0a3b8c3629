// Winograd F(4x4, 3x3) for one 3x3 stride-1 convolution, over any range of 4x4 output tiles of
// one image and whatever holds its rows: the cpu backend runs blocks of tiles over whole planes
// (cpu_winograd_conv.cpp), the fusion backend strips of tile rows out of its line buffers.
//
// Per call, every input channel of the tiles is transformed into 36 GEMM operands, the 36
// products (output channels x input channels x tiles) run on the f32 GEMM microkernel against
// weights transformed and packed once, and the output transform writes 4x4 output tiles with
// bias, residual and activation. Tiles are numbered row-major over the output (tiles_x per tile
// row), so a call may span tile rows when the map is narrow and no GEMM column is wasted on
// per-row padding.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "kernels/f32-winograd/f32_winograd.h"

namespace nfuse::backends::cpu {

class Winograd43 {
 public:
  struct Plane {  // one image's input and output sizes and the padding
    size_t h = 0, w = 0, ho = 0, wo = 0, pad_top = 0, pad_left = 0;
    size_t tiles_x() const { return (wo + 3) / 4; }
    size_t tiles() const { return (ho + 3) / 4 * tiles_x(); }
  };

  // w: [Co, Ci, 3, 3]. False when memory runs out.
  // With `packs` and the weight's value, the transformed weights come from (or go to) the store.
  bool init(const ir::Tensor& w, const ir::Tensor* bias, Activation act, PackStore* packs = nullptr,
            const ir::Value* weight = nullptr);
  size_t in_channels() const { return ci_; }
  size_t out_channels() const { return co_; }
  // Tiles whose transforms and products fill about one L2, in whole GEMM panels.
  size_t max_block_tiles() const;
  // Scratch for one call of up to `tiles` tiles over rows of width `wo`.
  size_t scratch_floats(size_t tiles, size_t wo) const;
  // Tiles [j0, j1) of one image. Output rows outside [y0, y1) are computed but not stored (a
  // strip that starts or ends inside a tile row); r: the residual at the output's positions.
  void run(const Plane& g, const ConstPlaneRows& x, const PlaneRows& y, const ConstPlaneRows* r, size_t j0, size_t j1,
           size_t y0, size_t y1, float* ws) const;

 private:
  static constexpr size_t kSkew = 16;

  const kernels::F32GemmConfig* cfg_ = nullptr;
  kernels::F32Wino43Kernels wino_;
  Activation act_;
  size_t co_ = 0, ci_ = 0, panels_ = 0, kc_ = 0;
  std::vector<float> bias_;
  PackedFloats packed_;
};

}  // namespace nfuse::backends::cpu
