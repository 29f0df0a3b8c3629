// The f32-sconv loops, included once per ISA by f32_sconv_{scalar,avx2,avx512}.cpp inside a
// namespace of its own: plain loops over contiguous arrays with fixed-size inner blocks, which
// the compiler vectorises and keeps in registers for that ISA.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/f32-sconv/f32_sconv.h"

namespace nfuse::kernels::NFUSE_SCONV_ISA_NS {

// Output columns summed together, for two output channels at once: 2 x 64 floats are eight
// AVX-512 accumulators (two FMAs per cycle at a latency of four need eight chains), 2 x 32 eight
// AVX2 ones. The rows are padded to kF32SconvChunk, a multiple of every ISA's chunk.
constexpr size_t kChunk = NFUSE_SCONV_CHUNK;
static_assert(kF32SconvChunk % kChunk == 0);
// Taps above which row() walks chunks outside and channels inside (see there).
constexpr size_t kChunkOuterTaps = 64;

// y[j] = clamp(acc[j]) for j < n: a whole chunk as a loop of fixed length, which vectorises.
inline void store(const float* acc, float* __restrict y, size_t n, float lo, float hi) {
  if (n == kChunk) {
    for (size_t j = 0; j < kChunk; ++j) y[j] = std::min(std::max(acc[j], lo), hi);
  } else {
    for (size_t j = 0; j < n; ++j) y[j] = std::min(std::max(acc[j], lo), hi);
  }
}

// Output channels co and co + 1 (when `pair`) over columns [x0, x0 + kChunk).
template <bool kPair>
inline void sum_chunk(const F32SconvRowArgs& a, const float* p, size_t stride, size_t taps, size_t co, size_t x0) {
  const float* w0 = a.weights + co * taps;
  const float* w1 = w0 + taps;
  float acc0[kChunk], acc1[kChunk];
  const float b0 = a.bias ? a.bias[co] : 0.0f, b1 = kPair && a.bias ? a.bias[co + 1] : 0.0f;
  for (size_t j = 0; j < kChunk; ++j) acc0[j] = b0;
  if constexpr (kPair) {
    for (size_t j = 0; j < kChunk; ++j) acc1[j] = b1;
  }
  for (size_t t = 0; t < taps; ++t) {
    const float* pt = p + t * stride + x0;
    const float u = w0[t];
    for (size_t j = 0; j < kChunk; ++j) acc0[j] += u * pt[j];
    if constexpr (kPair) {
      const float v = w1[t];
      for (size_t j = 0; j < kChunk; ++j) acc1[j] += v * pt[j];
    }
  }
  // Bounds in locals: read through `a`, they could alias the output rows, and the loops would
  // reload them per element instead of vectorising.
  const float lo = a.min, hi = a.max;
  const size_t n = std::min(kChunk, a.wo - x0);
  store(acc0, a.out + co * a.out_stride + x0, n, lo, hi);
  if constexpr (kPair) store(acc1, a.out + (co + 1) * a.out_stride + x0, n, lo, hi);
}

// P[t] for every tap: the input row shifted by kx - pad_left and, at stride 2, decimated.
inline void build_taps(const F32SconvRowArgs& a, float* p, size_t stride) {
  const int64_t w = static_cast<int64_t>(a.w), wo = static_cast<int64_t>(a.wo), sw = static_cast<int64_t>(a.sw);
  for (size_t r = 0; r < a.ci * a.kh; ++r) {
    const float* row = a.rows[r];
    for (size_t kx = 0; kx < a.kw; ++kx) {
      float* dst = p + (r * a.kw + kx) * stride;
      if (row == nullptr) {
        std::fill(dst, dst + stride, 0.0f);
        continue;
      }
      const int64_t off = static_cast<int64_t>(kx) - static_cast<int64_t>(a.pad_left);
      // Output columns whose input column ox * sw + off lies inside the row.
      const int64_t lo = std::min(wo, off >= 0 ? int64_t{0} : (-off + sw - 1) / sw);
      const int64_t hi = std::clamp(w - 1 - off >= 0 ? (w - 1 - off) / sw + 1 : int64_t{0}, lo, wo);
      std::fill(dst, dst + lo, 0.0f);
      const float* src = row + off;
      if (sw == 1) {
        for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox];
      } else {
        for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[2 * ox];
      }
      std::fill(dst + hi, dst + stride, 0.0f);
    }
  }
}

inline void row(const F32SconvRowArgs& a) {
  const size_t taps = a.ci * a.kh * a.kw;
  const size_t stride = (a.wo + kF32SconvChunk - 1) / kF32SconvChunk * kF32SconvChunk;  // zero-padded
  float* p = a.workspace;
  build_taps(a, p, stride);
  if (taps > kChunkOuterTaps) {
    // Chunks outside, channels inside: a chunk's taps (taps x kChunk floats) stay in L1 while
    // every output channel sums them; channels outside would stream the whole row's taps (108
    // taps of a 320-wide row: 138 KB) from L2 once per channel pair. YOLO's 6x6 stem: 4.2 -> 3.4 ms.
    for (size_t x0 = 0; x0 < a.wo; x0 += kChunk) {
      size_t co = 0;
      for (; co + 2 <= a.co; co += 2) sum_chunk<true>(a, p, stride, taps, co, x0);
      if (co < a.co) sum_chunk<false>(a, p, stride, taps, co, x0);
    }
    return;
  }
  // Few taps: channels outside, each pair's weights loaded once per row (the 27-tap stems ran
  // about 5% slower the other way).
  size_t co = 0;
  for (; co + 2 <= a.co; co += 2)
    for (size_t x0 = 0; x0 < a.wo; x0 += kChunk) sum_chunk<true>(a, p, stride, taps, co, x0);
  if (co < a.co)
    for (size_t x0 = 0; x0 < a.wo; x0 += kChunk) sum_chunk<false>(a, p, stride, taps, co, x0);
}

}  // namespace nfuse::kernels::NFUSE_SCONV_ISA_NS
