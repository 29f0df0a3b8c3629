// The W * X orientation of a W8A16 2-D convolution (nfuse.QLinearConv16) on the cpu backend
// (qs16_wxgemm.h): output channels are GEMM rows, pixels columns, so the NCHW input rows are X
// ([K x pixels], K in ONNX's (c, ky, kx) order, the weights need no reordering) and the output
// rows are NCHW rows: no transpose at either end, no im2col matrix. X is the input itself for a
// 1x1 stride-1 unpadded convolution; otherwise the group's planes are copied once, padded with
// x's zero point and split into stride phases (as cpu_qconv_padded.h does for 8 bits), so every
// (c, ky, kx) row segment of one output row is one contiguous run that the packer reads straight
// into the GEMM's X panels. Tasks split pixels first, so each packs only its own columns.
// Where the selected ISA has no W * X kernel (AVX2, NEON) the X * W path of
// cpu_qlinear_conv16.cpp runs instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "kernels/qs16-gemm/qs16_wxgemm.h"

namespace nfuse::backends::cpu {

class QConv16Wx {
 public:
  // The W * X kernel this CPU runs for the selected ISA, or nullptr (callers keep X * W).
  static const kernels::Qs16WxConfig* config();

  QConv16Wx(const kernels::Qs16WxConfig& cfg, size_t co, size_t k, size_t group);

  // Packs the s8 weights w [Co][K] per group with bias (int32 [Co] or nullptr), multipliers (f32
  // [Co]) and x's zero point (in x's type); false when memory runs out. Through `packs` when
  // given: `weight` is w's value, `baked` qconv_values_hash of the bias and multipliers.
  bool pack(const ir::Tensor& w, const int32_t* bias, const float* multiplier, int32_t x_zp, bool x_unsigned,
            PackStore* packs = nullptr, const ir::Value* weight = nullptr, uint64_t baked = 0);

  // Scratch floats per worker for geometry g: the packed X block, and the padded planes (worker
  // 0's, read by all).
  size_t scratch_floats(const Conv2dGeometry& g) const;

  // y (NCHW, 16-bit) from x (NCHW, 16-bit) with x's zero point and signedness as packed; the
  // scratch must hold scratch_floats(g).
  Status run(const Conv2dGeometry& g, const uint16_t* x, uint16_t* y, const kernels::Qs16GemmRequant& rq,
             RunContext& rc, const std::string& label);

 private:
  size_t kpad() const { return (k_ + 1) / 2 * 2; }
  size_t packed_x_bytes() const { return (kpad() * block_ * sizeof(int16_t) + 63) / 64 * 64; }
  // Output pixels [p0, p1) x channels [c0, c1) of one image and group, block by block of pixels.
  void task(const Conv2dGeometry& g, const uint16_t* base, const uint8_t* w, uint16_t* y, size_t p0, size_t p1,
            size_t c0, size_t c1, const kernels::Qs16GemmRequant& rq, float* scratch) const;

  static constexpr size_t kMaxBlock = 1024;         // pixels per block (a multiple of 32)
  static constexpr size_t kBlockBytes = 192 << 10;  // packed X per block
  const kernels::Qs16WxConfig& cfg_;
  size_t co_, k_, group_, panel_bytes_ = 0, block_ = 32;
  int32_t x_zp_ = 0;
  bool x_unsigned_ = false;
  bool direct_ = false;   // of the geometry run() last saw: X is the input planes
  size_t row_elems_ = 0;  // padded: elements of one padded row, all phases (direct: W)
  PackedFloats packed_;
  std::vector<size_t> row_offset_;  // each K row's start in the padded planes (or the input)
};

}  // namespace nfuse::backends::cpu
