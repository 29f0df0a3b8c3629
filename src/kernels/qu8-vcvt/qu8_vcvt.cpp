// Portable kernels of qu8_vcvt.h (the statement of the arithmetic) and the per-ISA selection.
#include "kernels/qu8-vcvt/qu8_vcvt.h"

#include <cmath>

namespace nfuse::kernels {

void qu8_unpack_f32__scalar(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<int32_t>(x[i] ^ flip) - zp);
}

void qu8_requant_f32__scalar(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                             uint8_t* y) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t acc =
        static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(sums[i])) + static_cast<uint32_t>(bias));
    float v = static_cast<float>(acc) * multiplier;
    v = v < rq.lo ? rq.lo : v;
    v = v > rq.hi ? rq.hi : v;
    const int32_t q = static_cast<int32_t>(std::nearbyint(v)) + rq.zero_point;
    y[i] = static_cast<uint8_t>(static_cast<uint32_t>(q) ^ rq.out_xor);
  }
}

Qu8VcvtKernels qu8_vcvt_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return {qu8_unpack_f32__avx512, qu8_requant_f32__avx512};
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return {qu8_unpack_f32__avx2, qu8_requant_f32__avx2};
#endif
  (void)isa;
  return {qu8_unpack_f32__scalar, qu8_requant_f32__scalar};
}

}  // namespace nfuse::kernels
