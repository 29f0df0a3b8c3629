// F(4,3) transforms for avx2: the shared loops of f32_winograd_impl.h compiled with this file's
// flags (cmake/nfuse_kernels.cmake gives *avx2* sources their ISA's options).
#if defined(__x86_64__)
#define NFUSE_WINO_ISA_NS wino_avx2
#include "kernels/f32-winograd/f32_winograd_impl.h"

namespace nfuse::kernels {

void f32_wino43_input__avx2(const F32Wino43InputArgs& args) { wino_avx2::input_transform(args); }
void f32_wino43_output__avx2(const F32Wino43OutputArgs& args) { wino_avx2::output_transform(args); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
