// The portable kernel of f32_rminmax.h and the per-ISA selection.
#include "kernels/f32-rminmax/f32_rminmax.h"

namespace nfuse::kernels {

void f32_rminmax__scalar(const float* x, size_t n, float* lo, float* hi) {
  // Four independent chains: the comparisons of one element do not wait for the previous one's.
  float l[4] = {*lo, *lo, *lo, *lo}, h[4] = {*hi, *hi, *hi, *hi};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (size_t j = 0; j < 4; ++j) {
      l[j] = x[i + j] < l[j] ? x[i + j] : l[j];
      h[j] = x[i + j] > h[j] ? x[i + j] : h[j];
    }
  }
  for (; i < n; ++i) {
    l[0] = x[i] < l[0] ? x[i] : l[0];
    h[0] = x[i] > h[0] ? x[i] : h[0];
  }
  for (size_t j = 1; j < 4; ++j) {
    l[0] = l[j] < l[0] ? l[j] : l[0];
    h[0] = h[j] > h[0] ? h[j] : h[0];
  }
  *lo = l[0];
  *hi = h[0];
}

F32MinMaxFn f32_rminmax_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return f32_rminmax__avx512;
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return f32_rminmax__avx2;
#endif
  (void)isa;
  return f32_rminmax__scalar;
}

}  // namespace nfuse::kernels
