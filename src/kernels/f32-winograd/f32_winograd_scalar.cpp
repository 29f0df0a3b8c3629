// F(4,3) transforms for scalar: the shared loops of f32_winograd_impl.h compiled with this file's
// flags (cmake/nfuse_kernels.cmake gives *scalar* sources their ISA's options).
#define NFUSE_WINO_ISA_NS wino_scalar
#include "kernels/f32-winograd/f32_winograd_impl.h"

namespace nfuse::kernels {

void f32_wino43_input__scalar(const F32Wino43InputArgs& args) { wino_scalar::input_transform(args); }
void f32_wino43_output__scalar(const F32Wino43OutputArgs& args) { wino_scalar::output_transform(args); }

}  // namespace nfuse::kernels
