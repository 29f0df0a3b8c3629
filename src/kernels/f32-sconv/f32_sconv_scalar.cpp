// f32-sconv, portable: the shared loops of f32_sconv_impl.h with the baseline flags.
#define NFUSE_SCONV_ISA_NS sconv_scalar
#define NFUSE_SCONV_CHUNK 16
#include "kernels/f32-sconv/f32_sconv_impl.h"

namespace nfuse::kernels {

void f32_sconv_row__scalar(const F32SconvRowArgs& args) { sconv_scalar::row(args); }

}  // namespace nfuse::kernels
