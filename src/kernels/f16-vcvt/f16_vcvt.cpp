// f16-vcvt kernel selection (f16_vcvt.h).
#include "kernels/f16-vcvt/f16_vcvt.h"

namespace nfuse::kernels {

const F16VcvtConfig& f16_vcvt_config(Isa isa) {
  static constexpr F16VcvtConfig kScalar{f16_f32_vcvt__scalar, f32_f16_vcvt__scalar};
#if defined(__x86_64__)
  static constexpr F16VcvtConfig kF16c{f16_f32_vcvt__f16c, f32_f16_vcvt__f16c};
  static const bool has_f16c = __builtin_cpu_supports("f16c");
  if ((isa == Isa::kAvx2Fma || isa == Isa::kAvx512) && has_f16c) return kF16c;
#else
  (void)isa;
#endif
  return kScalar;
}

}  // namespace nfuse::kernels
