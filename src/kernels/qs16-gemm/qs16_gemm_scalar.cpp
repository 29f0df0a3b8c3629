// Portable microkernels of the 16-bit-activation GEMM (KR 1): the fallback on every target and
// the plain statement of the arithmetic the SIMD kernels reproduce bit for bit (int64
// multiply-add, so no K chunking is needed here).
#include <cmath>
#include <cstring>

#include "kernels/qs16-gemm/qs16_gemm.h"

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 4;

// qs16_gemm.h, "Exactness": f32(acc) through f64 (exact below 2^51), one f32 multiply, clamp,
// round half to even, zero point.
inline int32_t requantize(int64_t acc, float multiplier, const Qs16GemmRequant& rq) {
  float x = static_cast<float>(static_cast<double>(acc)) * multiplier;
  x = x < rq.lo ? rq.lo : x;
  x = x > rq.hi ? rq.hi : x;
  return static_cast<int32_t>(std::nearbyint(x)) + rq.zero_point;
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c, size_t c_stride,
                 const Qs16GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const int8_t* b = reinterpret_cast<const int8_t*>(wb + kNr * sizeof(int64_t));
  int64_t acc[MR][kNr];
  for (size_t j = 0; j < kNr; ++j) {
    int64_t bias;
    std::memcpy(&bias, wb + j * sizeof(int64_t), sizeof bias);
    for (size_t r = 0; r < MR; ++r) acc[r][j] = bias;
  }
  for (size_t kk = 0; kk < kc; ++kk) {
    for (size_t r = 0; r < MR; ++r) {
      const int64_t av = a[kk * MR + r];
      for (size_t j = 0; j < kNr; ++j) acc[r][j] += av * b[kk * kNr + j];
    }
  }
  float mult[kNr];
  std::memcpy(mult, wb + kNr * sizeof(int64_t) + kc * kNr, sizeof mult);
  for (size_t r = 0; r < mr; ++r) {
    int16_t* row = c + r * c_stride;
    for (size_t j = 0; j < nc; ++j) {
      const int32_t q = requantize(acc[r][j], mult[j], rq);
      row[j] = static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint32_t>(q) ^ rq.out_xor));
    }
  }
}

}  // namespace

void qs16_gemm__scalar_4x4(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                           size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<4>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qs16_gemm__scalar_1x4(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                           size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels
