// Portable kernels of q_dequant.h (the statement of the arithmetic) and the per-ISA selection.
#include "kernels/q-dequant/q_dequant.h"

namespace nfuse::kernels {

void q8_dequantize__scalar(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i] ^ flip) - zp) * scale;
}

void q16_dequantize__scalar(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i] ^ flip) - zp) * scale;
}

QDequantizeKernels q_dequantize_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return {q8_dequantize__avx512, q16_dequantize__avx512};
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return {q8_dequantize__avx2, q16_dequantize__avx2};
#endif
  (void)isa;
  return {q8_dequantize__scalar, q16_dequantize__scalar};
}

}  // namespace nfuse::kernels
