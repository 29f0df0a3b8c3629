// f32-sconv for avx512: the shared loops of f32_sconv_impl.h compiled with this file's flags
// (cmake/nfuse_kernels.cmake gives *avx512* sources their ISA's options).
#if defined(__x86_64__)
#define NFUSE_SCONV_ISA_NS sconv_avx512
#define NFUSE_SCONV_CHUNK 64
#include "kernels/f32-sconv/f32_sconv_impl.h"

namespace nfuse::kernels {

void f32_sconv_row__avx512(const F32SconvRowArgs& args) { sconv_avx512::row(args); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
