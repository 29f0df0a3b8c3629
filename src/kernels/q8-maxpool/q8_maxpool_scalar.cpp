// Portable q8-maxpool kernels and the ISA selection.
#include <algorithm>

#include "kernels/q8-maxpool/q8_maxpool.h"

namespace nfuse::kernels {
namespace {

template <typename T>
void vmax(T* acc, const T* row, size_t n) {
  for (size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], row[i]);
}

template <typename T>
void hmax(const T* buf, size_t ow, size_t kw, size_t sw, size_t dw, T* out) {
  for (size_t o = 0; o < ow; ++o) {
    const T* b = buf + o * sw;
    T best = b[0];
    for (size_t k = 1; k < kw; ++k) best = std::max(best, b[k * dw]);
    out[o] = best;
  }
}

}  // namespace

void qu8_vmax__scalar(uint8_t* acc, const uint8_t* row, size_t n) { vmax(acc, row, n); }
void qs8_vmax__scalar(int8_t* acc, const int8_t* row, size_t n) { vmax(acc, row, n); }
void qu8_hmax__scalar(const uint8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, uint8_t* out) {
  hmax(buf, ow, kw, sw, dw, out);
}
void qs8_hmax__scalar(const int8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, int8_t* out) {
  hmax(buf, ow, kw, sw, dw, out);
}

const Q8MaxPoolConfig& q8_maxpool_config(Isa isa) {
  static constexpr Q8MaxPoolConfig kScalar{qu8_vmax__scalar, qs8_vmax__scalar, qu8_hmax__scalar, qs8_hmax__scalar};
#if defined(__x86_64__)
  static constexpr Q8MaxPoolConfig kAvx2{qu8_vmax__avx2, qs8_vmax__avx2, qu8_hmax__avx2, qs8_hmax__avx2};
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return kAvx2;
#else
  (void)isa;
#endif
  return kScalar;
}

}  // namespace nfuse::kernels
