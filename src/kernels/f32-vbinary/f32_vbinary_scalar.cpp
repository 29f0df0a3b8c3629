// f32-vbinary, portable: the shared loops of f32_vbinary_impl.h with the baseline flags (and
// -ffp-contract=off, as every f32-vbinary source: cmake/nfuse_kernels.cmake).
#define NFUSE_VBINARY_ISA_NS vbinary_scalar
#include "kernels/f32-vbinary/f32_vbinary_impl.h"

namespace nfuse::kernels {

const F32VbinaryConfig& f32_vbinary_config__scalar() { return vbinary_scalar::config(); }

}  // namespace nfuse::kernels
