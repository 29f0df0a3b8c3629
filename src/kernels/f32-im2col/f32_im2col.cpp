// im2col variant selection.
#include "kernels/f32-im2col/f32_im2col.h"

namespace nfuse::kernels {

F32Im2colFn f32_im2col_select() {
#if defined(__x86_64__)
  switch (selected_isa()) {
    case Isa::kAvx512: return f32_im2col__avx512;
    case Isa::kAvx2Fma: return f32_im2col__avx2;
    default: break;
  }
#endif
  return f32_im2col__scalar;  // aarch64: NEON is baseline, the compiler vectorises this build
}

}  // namespace nfuse::kernels
