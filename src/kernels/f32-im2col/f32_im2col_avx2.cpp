// im2col for avx2: the loops of f32_im2col_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake gives *avx2* sources their ISA's options).
#if defined(__x86_64__)
#define NFUSE_IM2COL_ISA_NS im2col_avx2
#include "kernels/f32-im2col/f32_im2col_impl.h"

namespace nfuse::kernels {

void f32_im2col__avx2(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                      size_t np, size_t nr, float* dst) {
  im2col_avx2::pack(g, x, kx_rows, k0, kc, p0, np, nr, dst);
}

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
