// f32-vmath for scalar: the shared loops of f32_vmath_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake: the ISA's options, and -fno-math-errno -fno-trapping-math for
// every f32-vmath source so that sqrt and the selects vectorise).
#define NFUSE_VMATH_ISA_NS vmath_scalar
#include "kernels/f32-vmath/f32_vmath_impl.h"

namespace nfuse::kernels {

const F32VmathConfig& f32_vmath_config__scalar() { return vmath_scalar::config(); }

}  // namespace nfuse::kernels
