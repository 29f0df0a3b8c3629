// f32-vmath for avx512: the shared loops of f32_vmath_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake: the ISA's options, and -fno-math-errno -fno-trapping-math for
// every f32-vmath source so that sqrt and the selects vectorise).
#if defined(__x86_64__)
#define NFUSE_VMATH_ISA_NS vmath_avx512
#include "kernels/f32-vmath/f32_vmath_impl.h"

namespace nfuse::kernels {

const F32VmathConfig& f32_vmath_config__avx512() { return vmath_avx512::config(); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
