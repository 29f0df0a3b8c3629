// The float region after a quantized convolution (nfuse.QLinearConvRegion): channel c's outputs,
// f32(acc) * scale[c] (scale = f32(x_scale * w_scale[c])), through the region's steps and
// quantized (times f32(1 / y_scale): ref's last step, folded into the quantize kernel), in
// L1-sized pieces on the ISA's kernels (f32-region, f32-qvcvt), each bit-exact with its scalar
// form, so the cpu convolutions that run it (cpu_qlinear_conv.cpp, cpu_qlinear_dwconv.cpp) give
// ref's bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/qlinear_region_program.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"

namespace nfuse::backends::cpu {

class ConvRegionEpilogue {
 public:
  static constexpr size_t kPiece = 512;  // elements per piece: steps x 2 KiB of slots

  // The program of a QLinearConvRegion with `channels` output channels, and scale[c]; an error
  // when a parameter or constant is not constant or not of the op's shapes (ref then runs it).
  static Result<ConvRegionEpilogue> read(const ir::Node& node, size_t channels);

  // f32(acc) * scale[c] for channel c (what the kernels' float epilogues compute).
  const std::vector<float>& scales() const { return scale_; }
  bool y_signed() const { return y_signed_; }
  // Floats of work a caller passes to finish() (per worker).
  size_t work_floats() const { return program_.steps.size() * kPiece; }
  // v: n values of channel c, already f32(acc) * scale[c] (read only); y: n outputs.
  void finish(const float* v, size_t n, size_t c, uint8_t* y, float* work) const;

 private:
  QLinearRegionProgram program_;
  std::vector<float> scale_;
  bool y_signed_ = false;
  kernels::RegionEvalFn eval_ = nullptr;
  kernels::F32QuantizeParams q_;
  kernels::F32QuantizeFn q8_ = nullptr;
};

}  // namespace nfuse::backends::cpu
