// Portable q8-rsum kernels and the ISA selection.
#include "kernels/q8-rsum/q8_rsum.h"

namespace nfuse::kernels {

int64_t qu8_rsum__scalar(const uint8_t* x, size_t n) {
  int64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  return s;
}

int64_t qs8_rsum__scalar(const int8_t* x, size_t n) {
  int64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  return s;
}

const Q8RsumConfig& q8_rsum_config(Isa isa) {
  static constexpr Q8RsumConfig kScalar{qu8_rsum__scalar, qs8_rsum__scalar};
#if defined(__x86_64__)
  static constexpr Q8RsumConfig kAvx2{qu8_rsum__avx2, qs8_rsum__avx2};
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return kAvx2;
#else
  (void)isa;
#endif
  return kScalar;
}

}  // namespace nfuse::kernels
