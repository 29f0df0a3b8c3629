// The portable x8-lut kernel and the family's ISA selection.
#include "kernels/x8-lut/x8_lut.h"

namespace nfuse::kernels {

void x8_lut__scalar_u1(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  for (size_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

namespace {

#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
bool has_avx512bw() { return isa_supported(Isa::kAvx512) && cpu_features().x86_avx512bw; }
bool has_avx512vbmi() { return has_avx512bw() && cpu_features().x86_avx512vbmi; }
#endif

}  // namespace

X8LutFn x8_lut_kernel(Isa isa) {
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512 && has_avx512vbmi()) return x8_lut__avx512vbmi_u256;
  if (isa == Isa::kAvx512 && has_avx512bw()) return x8_lut__avx512bw_u64;
#endif
  if ((isa == Isa::kAvx2Fma || isa == Isa::kAvx512) && isa_supported(Isa::kAvx2Fma)) return x8_lut__avx2_u32;
#elif defined(__aarch64__)
  if (isa == Isa::kNeon) return x8_lut__neon_u32;
#else
  (void)isa;
#endif
  return x8_lut__scalar_u1;
}

std::vector<X8LutVariant> x8_lut_variants() {
  std::vector<X8LutVariant> v = {{"scalar_u1", x8_lut__scalar_u1}};
#if defined(__x86_64__)
  if (isa_supported(Isa::kAvx2Fma)) v.push_back({"avx2_u32", x8_lut__avx2_u32});
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (has_avx512bw()) v.push_back({"avx512bw_u64", x8_lut__avx512bw_u64});
  if (has_avx512vbmi()) v.push_back({"avx512vbmi_u256", x8_lut__avx512vbmi_u256});
#endif
#elif defined(__aarch64__)
  if (isa_supported(Isa::kNeon)) v.push_back({"neon_u32", x8_lut__neon_u32});
#endif
  return v;
}

}  // namespace nfuse::kernels
