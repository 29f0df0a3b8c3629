// f16-vcvt kernel selection (f16_vcvt.h).
#include "kernels/f16-vcvt/f16_vcvt.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace nfuse::kernels {

const F16VcvtConfig& f16_vcvt_config(Isa isa) {
  static constexpr F16VcvtConfig kScalar{f16_f32_vcvt__scalar, f32_f16_vcvt__scalar};
#if defined(__x86_64__)
  static constexpr F16VcvtConfig kF16c{f16_f32_vcvt__f16c, f32_f16_vcvt__f16c};
  static const bool has_f16c = [] {  // CPUID leaf 1, ECX bit 29 (clang 14 lacks "f16c" in __builtin_cpu_supports)
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
  }();
  if ((isa == Isa::kAvx2Fma || isa == Isa::kAvx512) && has_f16c) return kF16c;
#else
  (void)isa;
#endif
  return kScalar;
}

}  // namespace nfuse::kernels
