// qs16-dwconv kernel selection (qs16_dwconv.h).
#include "kernels/qs16-dwconv/qs16_dwconv.h"

namespace nfuse::kernels {

Qs16DwRowFn qs16_dwconv_row_select(Isa isa) {
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return qs16_dwconv_row__avx512;
#endif
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return qs16_dwconv_row__avx2;
#else
  (void)isa;
#endif
  return qs16_dwconv_row__scalar;
}

}  // namespace nfuse::kernels
