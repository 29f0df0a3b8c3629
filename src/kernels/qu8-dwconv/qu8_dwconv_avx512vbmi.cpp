// AVX-512 VBMI + VNNI qu8-dwconv kernel (qu8_dwconv.h). The *avx512* build rule gives this file
// AVX-512F; BW, VL, VNNI and VBMI are enabled per function (qu8_dwconv3x3_select checks them).
#include "kernels/qu8-dwconv/qu8_dwconv.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593 (see qu8_gemm_avx512vnni.cpp)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)

namespace nfuse::kernels {

#define NFUSE_TARGET_QU8_DWCONV __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

namespace {

// vpermt2b indices: lane j (4 bytes) takes byte j*S of row 0 (bytes 0..31 of the first source),
// of row 1 (32..63), of row 2 (the second source: 64..95), and row 0 again (its weight is 0).
template <size_t S>
NFUSE_TARGET_QU8_DWCONV inline __m512i group_index() {
  alignas(64) uint8_t idx[64];
  for (size_t j = 0; j < 16; ++j) {
    idx[4 * j + 0] = static_cast<uint8_t>(j * S);
    idx[4 * j + 1] = static_cast<uint8_t>(32 + j * S);
    idx[4 * j + 2] = static_cast<uint8_t>(64 + j * S);
    idx[4 * j + 3] = static_cast<uint8_t>(j * S);
  }
  return _mm512_load_si512(idx);
}

// The 16 groups of one kx: 32 bytes from each row (only bytes j*S, j < 16, are used).
NFUSE_TARGET_QU8_DWCONV inline __m512i groups(__m512i idx, const uint8_t* r0, const uint8_t* r1, const uint8_t* r2) {
  const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0))),
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1)), 1);
  const __m512i b = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r2)));
  return _mm512_permutex2var_epi8(a, idx, b);
}

template <size_t S, bool kF32>
NFUSE_TARGET_QU8_DWCONV void dwconv3x3(const Qu8DwconvParams& p, size_t y0, size_t y1) {
  const __m512i idx = group_index<S>();
  const __m512i w0 = _mm512_set1_epi32(p.w[0]), w1 = _mm512_set1_epi32(p.w[1]), w2 = _mm512_set1_epi32(p.w[2]);
  const __m512i bias = _mm512_set1_epi32(p.bias);
  const __m512 mult = _mm512_set1_ps(p.multiplier);
  const __m512 lo = _mm512_set1_ps(p.rq.lo), hi = _mm512_set1_ps(p.rq.hi);
  const __m512i zp = _mm512_set1_epi32(p.rq.zero_point);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(p.rq.out_xor));
  for (size_t y = y0; y < y1; ++y) {
    const uint8_t* r0 = p.in + y * p.sh * p.in_stride;
    const uint8_t* r1 = r0 + p.in_stride;
    const uint8_t* r2 = r1 + p.in_stride;
    uint8_t* out = p.out + y * p.out_stride;
    for (size_t x = 0; x < p.out_width; x += 16) {
      const size_t c = x * S;
      __m512i acc = _mm512_dpbusd_epi32(bias, groups(idx, r0 + c, r1 + c, r2 + c), w0);
      acc = _mm512_dpbusd_epi32(acc, groups(idx, r0 + c + 1, r1 + c + 1, r2 + c + 1), w1);
      acc = _mm512_dpbusd_epi32(acc, groups(idx, r0 + c + 2, r1 + c + 2, r2 + c + 2), w2);
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mult);
      const size_t len = p.out_width - x < 16 ? p.out_width - x : 16;
      if (kF32) {
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(p.out) + y * p.out_stride + x,
                              static_cast<__mmask16>((1u << len) - 1u), v);
        continue;
      }
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      const __m512i q = _mm512_xor_si512(_mm512_add_epi32(_mm512_cvtps_epi32(v), zp), flip);
      _mm512_mask_cvtepi32_storeu_epi8(out + x, static_cast<__mmask16>((1u << len) - 1u), q);
    }
  }
}

}  // namespace

NFUSE_TARGET_QU8_DWCONV void qu8_dwconv3x3__avx512vbmi(const Qu8DwconvParams& p, size_t y0, size_t y1) {
  if (p.rq.f32_out) {
    p.sw == 1 ? dwconv3x3<1, true>(p, y0, y1) : dwconv3x3<2, true>(p, y0, y1);
  } else {
    p.sw == 1 ? dwconv3x3<1, false>(p, y0, y1) : dwconv3x3<2, false>(p, y0, y1);
  }
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
