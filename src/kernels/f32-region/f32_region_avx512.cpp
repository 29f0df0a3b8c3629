// f32-region for avx512 (f32_region_impl.h compiled with this file's flags).
#if defined(__x86_64__)
#define NFUSE_REGION_ISA_NS region_avx512
#include "kernels/f32-region/f32_region_impl.h"

namespace nfuse::kernels {

void region_eval__avx512(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n) {
  region_avx512::eval(steps, count, consts, slots, n);
}

}  // namespace nfuse::kernels
#endif
