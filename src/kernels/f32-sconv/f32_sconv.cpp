// f32-sconv kernel selection and workspace size (f32_sconv.h).
#include "kernels/f32-sconv/f32_sconv.h"

namespace nfuse::kernels {

size_t f32_sconv_workspace_floats(size_t taps, size_t wo) {
  return taps * ((wo + kF32SconvChunk - 1) / kF32SconvChunk * kF32SconvChunk);
}

F32SconvRowFn f32_sconv_row_kernel(Isa isa) {
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_sconv_row__avx512;
#endif
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_sconv_row__avx2;
#else
  (void)isa;
#endif
  return f32_sconv_row__scalar;
}

}  // namespace nfuse::kernels
