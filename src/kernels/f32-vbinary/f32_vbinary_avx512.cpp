// f32-vbinary for avx512: the shared loops of f32_vbinary_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake gives *avx512* sources their ISA's options, and f32-vbinary sources
// -ffp-contract=off).
#if defined(__x86_64__)
#define NFUSE_VBINARY_ISA_NS vbinary_avx512
#include "kernels/f32-vbinary/f32_vbinary_impl.h"

namespace nfuse::kernels {

const F32VbinaryConfig& f32_vbinary_config__avx512() { return vbinary_avx512::config(); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
