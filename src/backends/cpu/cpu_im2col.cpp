// The cpu backend's im2col entry point: its conv geometry mapped onto the kernel family
// (src/kernels/f32-im2col), with the ISA variant chosen once.
#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-im2col/f32_im2col.h"

namespace nfuse::backends::cpu {

void pack_im2col(const Conv2dGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                 size_t np, size_t nr, float* dst) {
  static const kernels::F32Im2colFn fn = kernels::f32_im2col_select();
  const kernels::F32Im2colGeometry k{g.h, g.w, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pad_top, g.pad_left};
  fn(k, x, kx_rows, k0, kc, p0, np, nr, dst);
}

}  // namespace nfuse::backends::cpu
