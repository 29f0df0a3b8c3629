// A quantized convolution's input as the W * X packer (qu8_wxgemm_pack_x_runs) reads its im2col
// columns: the input planes padded with x_zp's byte and split into sw column phases, so that
// every (c, ky, kx) row segment of one output row is one contiguous run (16-byte loads, no edge
// tests, no im2col matrix). Phase ph, padded row r, column j holds padded input
// (r - pad_top, j * sw + ph - pad_left).
//
// Any block of output rows [oy0, oy1) can be padded on its own, from whatever rows hold the
// input: the cpu op pads whole planes once per image (cpu_qlinear_conv.cpp), the fusion engine
// pads each strip's window from its line buffer (strip_qlinear.cpp). Either way the buffer holds
// the padded rows oy0 * sh .. (oy1 - 1) * sh + (kh - 1) * dh of every channel, one channel every
// plane_bytes(oy1 - oy0) bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"

namespace nfuse::backends::cpu {

class QConvPaddedRows {
 public:
  static constexpr size_t kMaxRuns = 64;  // pack_panel's run table (NR is 32)
  static constexpr size_t kSlack = 64;    // bytes after the last channel: the packer's load overshoot

  // g: one group's geometry (g.c / g.group input channels are padded); x_zp in the input's type.
  QConvPaddedRows(const Conv2dGeometry& g, int32_t x_zp, bool x_signed);

  // Bytes of one channel's padded rows for `out_rows` output rows (all phases).
  size_t plane_bytes(size_t out_rows) const;
  // Bytes of the buffer for `out_rows` output rows of every channel, slack included.
  size_t buffer_bytes(size_t out_rows) const { return channels_ * plane_bytes(out_rows) + kSlack; }
  // K = channels x kh x kw: where each K row (c, ky, kx), in ONNX's order, starts in a buffer for
  // `out_rows` output rows, relative to output pixel 0's tap (0, 0).
  void row_offsets(size_t out_rows, size_t* offsets) const;

  // Pads channels [c0, c1) of x for output rows [oy0, oy1) into buf (laid out for oy1 - oy0
  // rows). x holds input rows up to rows_end (exclusive) of each channel, at least those the
  // rows read; rows and phases no tap reads are left as they are.
  void fill(const PlaneRowsOf<const uint8_t>& x, size_t rows_end, size_t c0, size_t c1, size_t oy0, size_t oy1,
            uint8_t* buf) const;

  // The packed X panel of output pixels [q0, q0 + n) (n <= cfg.nr; pixels counted from the
  // buffer's first output row) from buf and its row_offsets().
  void pack_panel(const kernels::Qu8WxConfig& cfg, const size_t* offsets, size_t q0, size_t n, const uint8_t* buf,
                  uint8_t* out) const;

  // Channel quads: the same padded rows with four channels interleaved per pixel, sign bits
  // already flipped for s8 (the packed panels' bytes), for column stride 1 and channels a
  // multiple of 4. With K in (ky, kx, c) order, each K group of 4 (one tap, one quad) is then four
  // bytes per pixel, consecutive along an output row, so a panel is a copy of 4 * n bytes per K
  // group rather than a transpose of four rows (the packing cost as much as a third of a
  // convolution with few output channels over a long K). Quad q's rows start every
  // 4 * plane_bytes(out_rows) bytes; buffer_bytes() is the same.
  static bool quads_apply(const Conv2dGeometry& g) { return g.sw == 1 && (g.c / g.group) % 4 == 0 && g.kh * g.kw > 1; }
  // Where each K group (tap t = ky * kw + kx, quad q: group t * quads + q) starts, relative to
  // output pixel 0's tap (0, 0): k / 4 offsets.
  void quad_offsets(size_t out_rows, size_t* offsets) const;
  // fill() for quads [q0, q1).
  void fill_quads(const PlaneRowsOf<const uint8_t>& x, size_t q0, size_t q1, size_t oy0, size_t oy1,
                  uint8_t* buf) const;
  // Bytes from one quad's rows to the next's, in a buffer for `out_rows` output rows.
  size_t quad_stride(size_t out_rows) const { return 4 * plane_bytes(out_rows); }
  // Where output pixel q (counted from the buffer's first output row) reads tap (0, 0) of quad
  // 0, relative to quad_offsets()' origin: a panel of pixels on one output row reads K group
  // (t, q) at buf + quad_offsets()[t * quads + q] + this, 4 bytes per pixel.
  size_t quad_pixel_offset(size_t q) const { return 4 * ((q / g_.wo) * g_.sh * cols() + q % g_.wo); }
  // pack_panel() from a quad buffer and its quad_offsets().
  void pack_panel_quads(const kernels::Qu8WxConfig& cfg, const size_t* offsets, size_t q0, size_t n, const uint8_t* buf,
                        uint8_t* out) const;

 private:
  // Columns of one phase row: wo plus the window's reach in that phase.
  size_t cols() const { return g_.wo + (g_.kw - 1) * g_.dw / g_.sw; }
  // Padded rows `out_rows` output rows read.
  size_t rows(size_t out_rows) const { return (out_rows - 1) * g_.sh + (g_.kh - 1) * g_.dh + 1; }
  // One run per output-row segment of the n pixels from q0: (panel column, source offset in
  // elements of a padded plane, length); returns the count.
  size_t panel_runs(size_t q0, size_t n, kernels::Qu8WxRun* runs) const;

  Conv2dGeometry g_;
  size_t channels_ = 0, k_ = 0;
  uint8_t pad_ = 0;
  bool x_signed_ = false;
};

}  // namespace nfuse::backends::cpu
