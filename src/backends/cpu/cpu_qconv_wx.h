// The W * X orientation of a quantized 2-D convolution on the cpu backend (qu8_wxgemm.h): output
// channels are GEMM rows, pixels columns, so the NCHW input rows are X ([K x pixels], K in ONNX's
// (c, ky, kx) order, the weights need no reordering) and the output rows are NCHW rows. X is the
// input itself for a 1x1 stride-1 unpadded convolution; otherwise im2col columns are gathered
// straight into the GEMM's packed X panels (qu8_wxgemm_pack_x_runs) from a copy of the group's
// planes padded with x's zero point and split into stride phases (cpu_qconv_padded.h), so every
// (c, ky, kx) and output row is one contiguous run and no im2col matrix is built. Tasks split
// pixels first, so each packs only its own columns.
//
// With input channels a multiple of 4, column stride 1 and more than one tap, the padded rows
// interleave channel quads instead and K runs in (ky, kx, c) order (use_channel_quads): a panel
// whose pixels lie on one output row is then read in place by the kernel's quad ukernel (no
// packing at all), and the others are copies of 4 bytes per pixel and K group.
//
// Shared by QLinearConv (u8 / s8 output, parameters fixed at pack time) and the dynamically
// quantized Conv (float output; x's zero point and scale known per run, written into the packed
// panels by set_row_params before each run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_conv_region_epilogue.h"
#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"

namespace nfuse::backends::cpu {

// The W * X panels of `group` groups of s8 weights [co / group][k] at w (bias and multiplier:
// [co] or nullptr), one group every qu8_wxgemm_packed_w_size(cfg, co / group, k) bytes at dst.
void pack_wx_panels(const kernels::Qu8WxConfig& cfg, size_t co, size_t k, size_t group, const int8_t* w,
                    const int32_t* bias, const float* multiplier, int32_t x_zp, bool x_signed, uint8_t* dst);

class QConvPaddedRows;

class QConvWx {
 public:
  // The W * X kernel this CPU runs for the selected ISA, or nullptr (callers keep X * W).
  static const kernels::Qu8WxConfig* config();

  QConvWx(const kernels::Qu8WxConfig& cfg, size_t co, size_t k, size_t group);

  // Before pack(): run geometry g's kind on channel quads (QConvPaddedRows::quads_apply; the
  // weights are then packed with K in (ky, kx, c) order). `taps` = kh * kw. Not with pack_with.
  void use_channel_quads(size_t taps) { quad_taps_ = taps; }
  bool quads() const { return quad_taps_ != 0; }

  // Packs the s8 weights [Co][K] per group with bias (int32 [Co] or nullptr), multipliers (f32
  // [Co] or nullptr) and x's zero point; false when memory runs out. Through `packs` under
  // `key` when all three are given (QLinearConv's graph value `weight`: a context binary's bytes
  // are read in place).
  bool pack(const int8_t* w, const int32_t* bias, const float* multiplier, int32_t x_zp, bool x_signed,
            PackStore* packs = nullptr, const ir::Value* weight = nullptr,
            const std::function<std::string()>& key = {});
  // Packs the s8 weights that `produce` writes ([Co][K]) with no bias, multipliers or zero point,
  // for callers that write the row parameters per run (set_row_params): through `packs` under
  // `key` when given, then copied into memory of the op's own, so that neither a binary's
  // read-only panels nor a recording store's are rewritten. False when memory runs out.
  bool pack_with(PackStore* packs, const ir::Value* weight, const std::function<std::string()>& key,
                 const std::function<void(int8_t*)>& produce);
  // Rewrites every row's bias' and multiplier ([Co] each) in the packed weights (packed without
  // a store, or by pack_with: never a read-only binary's).
  void set_row_params(const int32_t* bias_prime, const float* multiplier);

  // Scratch floats per worker for geometry g (the padded planes use x's zero point's byte only
  // for their contents, not their size); with `region`, also its float tile and work.
  size_t scratch_floats(const Conv2dGeometry& g, const ConvRegionEpilogue* region = nullptr) const;

  // The float epilogue (rq.f32_out): per output channel a bias and, optionally, the factor c_o of
  // the zero-point cross term c_o * (colsum(X)_pixel - K * x_zp), added to the accumulator.
  // Both [Co + MR]: a tile reads MR entries.
  struct FloatEpilogue {
    const float* row_bias = nullptr;
    const int32_t* row_factor = nullptr;
  };

  // y (NCHW: u8 / s8 bytes, or floats with rq.f32_out) from x (NCHW u8 / s8) with x's zero point
  // x_zp; the scratch must hold scratch_floats(g, region). With `region` (and rq.f32_out, the
  // multipliers packed as its scales), each tile's float rows land in the worker's scratch and
  // the region finishes them into y's u8 / s8 rows while they are in L1.
  Status run(const Conv2dGeometry& g, const uint8_t* x, int32_t x_zp, bool x_signed, void* y,
             const kernels::Qu8GemmRequant& rq, const FloatEpilogue& fe, RunContext& rc, const std::string& label,
             const ConvRegionEpilogue* region = nullptr);

 private:
  size_t packed_x_bytes() const { return ((k_ + 3) / 4 * 4 * block_ + 63) / 64 * 64; }
  // Output pixels [p0, p1) x channels [c0, c1) of one image and group, block by block of pixels.
  void task(const Conv2dGeometry& g, const QConvPaddedRows* padded, const uint8_t* buf, const uint8_t* x, bool x_signed,
            int32_t x_zp, const uint8_t* w, uint8_t* y, size_t y_elem, size_t p0, size_t p1, size_t c0, size_t c1,
            const kernels::Qu8GemmRequant& rq, const FloatEpilogue& fe, float* scratch,
            const ConvRegionEpilogue* region, size_t first_channel, float* tile) const;

  static constexpr size_t kMaxBlock = 1024;         // pixels per block (a multiple of 32)
  static constexpr size_t kBlockBytes = 160 << 10;  // packed X per block
  const kernels::Qu8WxConfig& cfg_;
  size_t co_, k_, group_, panel_bytes_ = 0, block_ = 32;
  size_t quad_taps_ = 0;  // kh * kw when the input runs as channel quads, else 0
  PackedFloats packed_;
  std::vector<size_t> row_offset_;  // each K row's (with quads: K group's) start in the padded planes
  std::vector<size_t> tap_offset_;  // with quads: each tap's quad 0 (row_offset_ every `quads` groups)
  size_t quad_stride_ = 0;
};

}  // namespace nfuse::backends::cpu
