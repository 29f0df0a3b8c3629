// The row-range entry point of the cpu backend's 2-D pooling (cpu_pool.cpp), shared with the
// fusion backend, which pools strips of rows out of its line buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nfuse::backends::cpu {

enum class PoolKind { kMax, kAverage, kGlobalAverage };

struct PoolGeometry {
  size_t planes = 0, h = 0, w = 0, ho = 0, wo = 0;
  size_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
};

// One plane's output rows [y0, y1) of MaxPool / AveragePool (not kGlobalAverage); x is the
// plane (row r at x + r * g.w), y the output plane (row oy at y + oy * g.wo). Windows are clipped
// to the input; the average divides by the clipped count, or by kh*kw when padding counts (only
// offered when no window leaves the padded input, see make_pool).
void pool_rows(PoolKind kind, bool count_pad, const PoolGeometry& g, const float* x, float* y, size_t y0, size_t y1);

// The same for MaxPool on u8 / i8 (T = uint8_t or int8_t; cpu_qlinear_pool.cpp): buf is private
// scratch of q8_maxpool_buffer_bytes(g) bytes. Exact like any maximum.
size_t q8_maxpool_buffer_bytes(const PoolGeometry& g);
template <typename T>
void q8_maxpool_rows(const PoolGeometry& g, const T* x, T* y, size_t y0, size_t y1, T* buf);

}  // namespace nfuse::backends::cpu
