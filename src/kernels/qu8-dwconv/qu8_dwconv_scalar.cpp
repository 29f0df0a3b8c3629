// Portable qu8-dwconv kernel (the statement of the arithmetic), helpers and the ISA selection.
#include <cmath>

#include "kernels/qu8-dwconv/qu8_dwconv.h"

namespace nfuse::kernels {

void qu8_dwconv3x3__scalar(const Qu8DwconvParams& p, size_t y0, size_t y1) {
  for (size_t y = y0; y < y1; ++y) {
    for (size_t x = 0; x < p.out_width; ++x) {
      uint32_t acc = static_cast<uint32_t>(p.bias);
      for (size_t ky = 0; ky < 3; ++ky) {
        const uint8_t* row = p.in + (y * p.sh + ky) * p.in_stride + x * p.sw;
        for (size_t kx = 0; kx < 3; ++kx) {
          const int8_t w = static_cast<int8_t>(static_cast<uint32_t>(p.w[kx]) >> (8 * ky));
          acc += static_cast<uint32_t>(static_cast<int32_t>(row[kx]) * w);
        }
      }
      float v = static_cast<float>(static_cast<int32_t>(acc)) * p.multiplier;
      if (p.rq.f32_out) {
        reinterpret_cast<float*>(p.out)[y * p.out_stride + x] = v;
        continue;
      }
      v = v < p.rq.lo ? p.rq.lo : v;
      v = v > p.rq.hi ? p.rq.hi : v;
      const int32_t q = static_cast<int32_t>(std::nearbyint(v)) + p.rq.zero_point;
      p.out[y * p.out_stride + x] = static_cast<uint8_t>(static_cast<uint32_t>(q) ^ p.rq.out_xor);
    }
  }
}

int32_t qu8_dwconv_pack_column(const int8_t* w3x3, size_t kx) {
  uint32_t v = 0;
  for (size_t ky = 0; ky < 3; ++ky) v |= static_cast<uint32_t>(static_cast<uint8_t>(w3x3[ky * 3 + kx])) << (8 * ky);
  return static_cast<int32_t>(v);
}

size_t qu8_dwconv_row_bytes(size_t out_width, size_t sw) {
  const size_t steps = (out_width + 15) / 16;
  return (steps > 0 ? (steps - 1) * 16 * sw : 0) + 2 + 32;
}

Qu8DwconvFn qu8_dwconv3x3_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  const CpuFeatures& f = cpu_features();
  if (isa == Isa::kAvx512 && f.x86_avx512bw && f.x86_avx512vl && f.x86_avx512vnni && f.x86_avx512vbmi) {
    return qu8_dwconv3x3__avx512vbmi;
  }
#endif
  (void)isa;
  return nullptr;
}

}  // namespace nfuse::kernels
