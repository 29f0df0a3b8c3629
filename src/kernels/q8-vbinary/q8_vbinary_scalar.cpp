// Portable q8-vbinary kernels (one element at a time, q8_vbinary_one) and the ISA selection.
#include "kernels/q8-vbinary/q8_vbinary.h"

namespace nfuse::kernels {
namespace {

template <typename T, bool kMul, bool kConstB>
void run(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  for (size_t i = 0; i < n; ++i) y[i] = q8_vbinary_one<T, kMul, kConstB>(a[i], b[kConstB ? 0 : i], p);
}

}  // namespace

#define NFUSE_Q8_VBINARY_DEFINE(isa)                                                                          \
  void qu8_vadd__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {  \
    run<uint8_t, false, false>(a, b, y, n, p);                                                                \
  }                                                                                                           \
  void qu8_vaddc__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) { \
    run<uint8_t, false, true>(a, b, y, n, p);                                                                 \
  }                                                                                                           \
  void qu8_vmul__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {  \
    run<uint8_t, true, false>(a, b, y, n, p);                                                                 \
  }                                                                                                           \
  void qu8_vmulc__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) { \
    run<uint8_t, true, true>(a, b, y, n, p);                                                                  \
  }                                                                                                           \
  void qs8_vadd__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {     \
    run<int8_t, false, false>(a, b, y, n, p);                                                                 \
  }                                                                                                           \
  void qs8_vaddc__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {    \
    run<int8_t, false, true>(a, b, y, n, p);                                                                  \
  }                                                                                                           \
  void qs8_vmul__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {     \
    run<int8_t, true, false>(a, b, y, n, p);                                                                  \
  }                                                                                                           \
  void qs8_vmulc__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {    \
    run<int8_t, true, true>(a, b, y, n, p);                                                                   \
  }

NFUSE_Q8_VBINARY_DEFINE(scalar)

const Q8VbinaryConfig<uint8_t>& qu8_vbinary_config(Isa isa) {
  static constexpr Q8VbinaryConfig<uint8_t> kScalar{qu8_vadd__scalar, qu8_vaddc__scalar, qu8_vmul__scalar,
                                                    qu8_vmulc__scalar};
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  static constexpr Q8VbinaryConfig<uint8_t> kAvx512{qu8_vadd__avx512, qu8_vaddc__avx512, qu8_vmul__avx512,
                                                    qu8_vmulc__avx512};
  if (isa == Isa::kAvx512) return kAvx512;
#endif
  static constexpr Q8VbinaryConfig<uint8_t> kAvx2{qu8_vadd__avx2, qu8_vaddc__avx2, qu8_vmul__avx2, qu8_vmulc__avx2};
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return kAvx2;
#elif defined(__aarch64__)
  static constexpr Q8VbinaryConfig<uint8_t> kNeon{qu8_vadd__neon, qu8_vaddc__neon, qu8_vmul__neon, qu8_vmulc__neon};
  if (isa == Isa::kNeon) return kNeon;
#else
  (void)isa;
#endif
  return kScalar;
}

const Q8VbinaryConfig<int8_t>& qs8_vbinary_config(Isa isa) {
  static constexpr Q8VbinaryConfig<int8_t> kScalar{qs8_vadd__scalar, qs8_vaddc__scalar, qs8_vmul__scalar,
                                                   qs8_vmulc__scalar};
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  static constexpr Q8VbinaryConfig<int8_t> kAvx512{qs8_vadd__avx512, qs8_vaddc__avx512, qs8_vmul__avx512,
                                                   qs8_vmulc__avx512};
  if (isa == Isa::kAvx512) return kAvx512;
#endif
  static constexpr Q8VbinaryConfig<int8_t> kAvx2{qs8_vadd__avx2, qs8_vaddc__avx2, qs8_vmul__avx2, qs8_vmulc__avx2};
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return kAvx2;
#elif defined(__aarch64__)
  static constexpr Q8VbinaryConfig<int8_t> kNeon{qs8_vadd__neon, qs8_vaddc__neon, qs8_vmul__neon, qs8_vmulc__neon};
  if (isa == Isa::kNeon) return kNeon;
#else
  (void)isa;
#endif
  return kScalar;
}

}  // namespace nfuse::kernels
