// The depthwise Conv op of cpu_dwconv.cpp, for the ops built on it (cpu_conv.cpp's Conv,
// cpu_dynamic_quant_conv.cpp's dynamically quantized depthwise Conv).
#pragma once

#include <memory>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"

namespace nfuse::backends::cpu {

// A dynamically quantized depthwise Conv's per-run input map and output scale: each input plane is
// quantized and centred (x_q - a as f32, f32_qvcvt.h) on its way into the kernel, while it is in
// the worker's cache, the kernel sums the integer products exactly (the op's weights are w - w_zp
// as f32), and each output y becomes act(clamp(y * scale[c] + bias[c], act.min, act.max)).
struct DwCenteredInput {
  kernels::F32QuantizeCenteredFn quantize = nullptr;
  kernels::F32QuantizeParams params;  // params.scale 0 (an all-zero input): every value maps to 0
  const float* scale = nullptr;       // per channel
  const float* bias = nullptr;        // per channel
  const Activation* act = nullptr;
};

class DwConvOp : public CpuOp {
 public:
  virtual Status run_centered(const OpTensors& t, RunContext& rc, const DwCenteredInput& in) = 0;
};

// w: [C, 1, kh, kw] f32; bias: [C] or nullptr; both the node's graph constants, read in place
// for the op's life. x_dims: the planned input dims (nullptr when unknown until run time).
// packs: where the channel-block taps are packed through (null: the op packs its own).
std::unique_ptr<DwConvOp> make_dwconv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                      Epilogue epilogue, const std::vector<int64_t>* x_dims = nullptr,
                                      PackStore* packs = nullptr);
// The same for run_centered() only: its scratch holds an input plane for the map; w (f32 of
// `w_dims`, computed or served from a binary by the caller) is kept by the op.
std::unique_ptr<DwConvOp> make_dwconv_centered(const ir::Node& node, std::vector<int64_t> w_dims, PackedFloats w);

}  // namespace nfuse::backends::cpu
