// f32-vmath kernel selection (f32_vmath.h).
#include "kernels/f32-vmath/f32_vmath.h"

namespace nfuse::kernels {

const F32VmathConfig& f32_vmath_config(Isa isa) {
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_vmath_config__avx512();
#endif
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_vmath_config__avx2();
#else
  (void)isa;
#endif
  return f32_vmath_config__scalar();
}

}  // namespace nfuse::kernels
