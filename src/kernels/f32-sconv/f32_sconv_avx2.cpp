// f32-sconv for avx2: the shared loops of f32_sconv_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake gives *avx2* sources their ISA's options).
#if defined(__x86_64__)
#define NFUSE_SCONV_ISA_NS sconv_avx2
#define NFUSE_SCONV_CHUNK 32
#include "kernels/f32-sconv/f32_sconv_impl.h"

namespace nfuse::kernels {

void f32_sconv_row__avx2(const F32SconvRowArgs& args) { sconv_avx2::row(args); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
