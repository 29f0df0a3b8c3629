// f32-vbinary kernel selection (f32_vbinary.h).
#include "kernels/f32-vbinary/f32_vbinary.h"

namespace nfuse::kernels {

const F32VbinaryConfig& f32_vbinary_config(Isa isa) {
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_vbinary_config__avx512();
#endif
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_vbinary_config__avx2();
#else
  (void)isa;
#endif
  return f32_vbinary_config__scalar();
}

}  // namespace nfuse::kernels
