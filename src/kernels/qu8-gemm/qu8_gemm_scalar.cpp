// Portable microkernels of the quantized GEMM (KR 1, A packed as u8): the fallback on every
// target, and the plain statement of the arithmetic the SIMD kernels reproduce bit for bit.
#include <cmath>
#include <cstring>

#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 4;

// The requantization of qu8_gemm.h ("Exactness"): f32 product, clamp to [lo, hi] in f32, round
// half to even, add the zero point.
inline int32_t requantize(int32_t acc, float multiplier, const Qu8GemmRequant& rq) {
  float x = static_cast<float>(acc) * multiplier;
  x = x < rq.lo ? rq.lo : x;
  x = x > rq.hi ? rq.hi : x;
  return static_cast<int32_t>(std::nearbyint(x)) + rq.zero_point;
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const void* a_panel, const void* w, void* c, size_t c_stride,
                 const Qu8GemmRequant& rq) {
  const uint8_t* a = static_cast<const uint8_t*>(a_panel);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const int8_t* b = reinterpret_cast<const int8_t*>(wb + kNr * sizeof(int32_t));
  // Wrapping int32 accumulation (uint32 arithmetic: no signed overflow), as the SIMD kernels.
  uint32_t acc[MR][kNr];
  for (size_t j = 0; j < kNr; ++j) {
    int32_t bias;
    std::memcpy(&bias, wb + j * sizeof(int32_t), sizeof bias);
    for (size_t r = 0; r < MR; ++r) {
      acc[r][j] = static_cast<uint32_t>(bias);
    }
  }
  for (size_t kk = 0; kk < kc; ++kk) {
    for (size_t r = 0; r < MR; ++r) {
      const int32_t av = a[kk * MR + r];
      for (size_t j = 0; j < kNr; ++j) {
        acc[r][j] += static_cast<uint32_t>(av * static_cast<int32_t>(b[kk * kNr + j]));
      }
    }
  }
  if (rq.int32_out) {
    for (size_t r = 0; r < mr; ++r) {
      int32_t* row = static_cast<int32_t*>(c) + r * c_stride;
      for (size_t j = 0; j < nc; ++j) {
        row[j] = static_cast<int32_t>(acc[r][j]);
      }
    }
    return;
  }
  float mult[kNr];
  std::memcpy(mult, wb + kNr * sizeof(int32_t) + kc * kNr, sizeof mult);
  for (size_t r = 0; r < mr; ++r) {
    uint8_t* row = static_cast<uint8_t*>(c) + r * c_stride;
    for (size_t j = 0; j < nc; ++j) {
      const int32_t q = requantize(static_cast<int32_t>(acc[r][j]), mult[j], rq);
      row[j] = static_cast<uint8_t>(static_cast<uint32_t>(q) ^ rq.out_xor);
    }
  }
}

}  // namespace

void qu8_gemm__scalar_4x4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                          size_t c_stride, const Qu8GemmRequant& rq) {
  gemm<4>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qu8_gemm__scalar_1x4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                          size_t c_stride, const Qu8GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels
