// f32-region for scalar (f32_region_impl.h compiled with this file's flags).
#define NFUSE_REGION_ISA_NS region_scalar
#include "kernels/f32-region/f32_region_impl.h"

namespace nfuse::kernels {

void region_eval__scalar(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n) {
  region_scalar::eval(steps, count, consts, slots, n);
}

}  // namespace nfuse::kernels
