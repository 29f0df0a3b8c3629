// im2col for scalar: the loops of f32_im2col_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake gives *scalar* sources their ISA's options).
#define NFUSE_IM2COL_ISA_NS im2col_scalar
#include "kernels/f32-im2col/f32_im2col_impl.h"

namespace nfuse::kernels {

void f32_im2col__scalar(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                        size_t np, size_t nr, float* dst) {
  im2col_scalar::pack(g, x, kx_rows, k0, kc, p0, np, nr, dst);
}

}  // namespace nfuse::kernels
