// A dense convolution with few input channels (a network's stem: 3 channels in, 3x3 stride 2)
// computed directly, output row by output row, on the f32-sconv kernels: the cpu backend runs
// whole planes (cpu_small_channel_conv.cpp), the fusion backend strips of rows out of its line
// buffers. Both ask use_small_channel_conv(), so a layer runs the same way on either.
#pragma once

#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "core/aligned_storage.h"
#include "kernels/f32-sconv/f32_sconv.h"

namespace nfuse::backends::cpu {

class SmallChannelConv {
 public:
  struct Plane {  // one image's input and output sizes, the window and the padding
    size_t h = 0, w = 0, ho = 0, wo = 0, kh = 1, kw = 1, sh = 1, sw = 1, pad_top = 0, pad_left = 0;
  };

  // w: [Co, Ci, kh, kw]; w and bias are the node's graph constants, read in place.
  void init(const ir::Tensor& w, const ir::Tensor* bias, Activation act);
  size_t scratch_floats(size_t wo) const { return kernels::f32_sconv_workspace_floats(taps_, wo); }
  // Output rows [y0, y1) of one image, every channel.
  void run(const Plane& g, const ConstPlaneRows& x, const PlaneRows& y, size_t y0, size_t y1, float* ws) const;

 private:
  kernels::F32SconvRowFn fn_ = nullptr;
  Activation act_;
  size_t co_ = 0, ci_ = 0, taps_ = 0;
  PackedFloats weights_, bias_;  // bias: none when null
};

// Whether the cpu backend runs Conv `node` with weights `w` directly: one group, no dilation, up
// to 4 input channels and kF32SconvMaxTaps taps, stride 1 or 2 across, and no fused residual.
bool use_small_channel_conv(const ir::Node& node, const ir::Tensor& w);
Result<std::unique_ptr<CpuOp>> make_small_channel_conv(const ir::Node& node, const ir::Tensor& w,
                                                       const ir::Tensor* bias, Epilogue epilogue);

}  // namespace nfuse::backends::cpu
