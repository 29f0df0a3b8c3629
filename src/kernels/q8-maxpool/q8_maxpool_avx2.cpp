// AVX2 q8-maxpool kernels (this file alone is built with -mavx2 -mfma): 32 outputs per step; a
// partial last step of hmax computes a full vector (reading into the caller's slack) and stores
// only the outputs that exist.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/q8-maxpool/q8_maxpool.h"

namespace nfuse::kernels {
namespace {

struct MaxU8 {
  static __m256i max(__m256i a, __m256i b) { return _mm256_max_epu8(a, b); }
};
struct MaxS8 {
  static __m256i max(__m256i a, __m256i b) { return _mm256_max_epi8(a, b); }
};

inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

template <typename M>
void vmax(uint8_t* acc, const uint8_t* row, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i), M::max(load(acc + i), load(row + i)));
  }
  if (i < n) {
    alignas(32) uint8_t a[32] = {}, r[32] = {};
    std::memcpy(a, acc + i, n - i);
    std::memcpy(r, row + i, n - i);
    _mm256_store_si256(reinterpret_cast<__m256i*>(a), M::max(load(a), load(r)));
    std::memcpy(acc + i, a, n - i);
  }
}

// Maxima of the kw-tap windows that start at the 32 entries b[0..31].
template <typename M>
inline __m256i window_max(const uint8_t* b, size_t kw, size_t dw) {
  __m256i v = load(b);
  for (size_t k = 1; k < kw; ++k) v = M::max(v, load(b + k * dw));
  return v;
}

inline void store_outputs(uint8_t* out, __m256i v, size_t count) {
  if (count >= 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v);
  } else {
    alignas(32) uint8_t tmp[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), v);
    std::memcpy(out, tmp, count);
  }
}

template <typename M>
void hmax(const uint8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, uint8_t* out) {
  if (sw == 1) {
    for (size_t o = 0; o < ow; o += 32) store_outputs(out + o, window_max<M>(buf + o, kw, dw), ow - o);
    return;
  }
  if (sw == 2) {
    // Window maxima at the 64 entries from 2o, then their even bytes: the low byte of each word
    // (masked to 0..255, so vpackuswb does not saturate), packed per 128-bit lane and put back in
    // order by vpermq.
    const __m256i low = _mm256_set1_epi16(0x00FF);
    for (size_t o = 0; o < ow; o += 32) {
      const __m256i a = _mm256_and_si256(window_max<M>(buf + 2 * o, kw, dw), low);
      const __m256i b = _mm256_and_si256(window_max<M>(buf + 2 * o + 32, kw, dw), low);
      const __m256i even = _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8);
      store_outputs(out + o, even, ow - o);
    }
    return;
  }
  for (size_t o = 0; o < ow; ++o) {
    const uint8_t* b = buf + o * sw;
    uint8_t best = b[0];
    for (size_t k = 1; k < kw; ++k) {
      if constexpr (std::is_same_v<M, MaxU8>) best = std::max(best, b[k * dw]);
      else best = static_cast<uint8_t>(std::max(static_cast<int8_t>(best), static_cast<int8_t>(b[k * dw])));
    }
    out[o] = best;
  }
}

}  // namespace

void qu8_vmax__avx2(uint8_t* acc, const uint8_t* row, size_t n) { vmax<MaxU8>(acc, row, n); }
void qs8_vmax__avx2(int8_t* acc, const int8_t* row, size_t n) {
  vmax<MaxS8>(reinterpret_cast<uint8_t*>(acc), reinterpret_cast<const uint8_t*>(row), n);
}
void qu8_hmax__avx2(const uint8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, uint8_t* out) {
  hmax<MaxU8>(buf, ow, kw, sw, dw, out);
}
void qs8_hmax__avx2(const int8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, int8_t* out) {
  hmax<MaxS8>(reinterpret_cast<const uint8_t*>(buf), ow, kw, sw, dw, reinterpret_cast<uint8_t*>(out));
}

}  // namespace nfuse::kernels
