#include "kernels/f32-dwconv/f32_dwconv_c16.h"

#include <algorithm>

namespace nfuse::kernels {

namespace {

// Rows and columns of the padded input block: exactly what the windows reach.
size_t padded_rows(const F32DwconvC16Params& p) { return (p.out_h - 1) * p.sh + (p.kh - 1) * p.dh + 1; }
size_t padded_cols(const F32DwconvC16Params& p) { return (p.out_w - 1) * p.sw + (p.kw - 1) * p.dw + 1; }

}  // namespace

size_t f32_dwconv_c16_scratch_floats(const F32DwconvC16Params& p) {
  if (p.out_h == 0 || p.out_w == 0) return 0;
  // Input block, output block (rounded up to whole 16-pixel chunks of a row).
  const size_t out_cols = (p.out_w + 15) / 16 * 16;
  return (padded_rows(p) * padded_cols(p) + p.out_h * out_cols) * 16;
}

void f32_dwconv_c16_pack(const float* weights, size_t channels, size_t taps, float* dst) {
  for (size_t t = 0; t < taps; ++t)
    for (size_t c = 0; c < 16; ++c) dst[t * 16 + c] = c < channels ? weights[c * taps + t] : 0.0f;
}

void f32_dwconv_c16__scalar(const F32DwconvC16Params& p) {
  for (size_t c = 0; c < p.channels; ++c) {
    const float* in = p.in + c * p.in_plane;
    const float* w = p.taps16 + c;
    float* out = p.out + c * p.out_plane;
    for (size_t y = 0; y < p.out_h; ++y) {
      for (size_t x = 0; x < p.out_w; ++x) {
        float acc = p.bias ? p.bias[c] : 0.0f;
        for (size_t ky = 0; ky < p.kh; ++ky) {
          const size_t iy = y * p.sh + ky * p.dh;
          if (iy < p.pad_top || iy - p.pad_top >= p.h) continue;
          for (size_t kx = 0; kx < p.kw; ++kx) {
            const size_t ix = x * p.sw + kx * p.dw;
            if (ix < p.pad_left || ix - p.pad_left >= p.w) continue;
            acc += w[(ky * p.kw + kx) * 16] * in[(iy - p.pad_top) * p.w + (ix - p.pad_left)];
          }
        }
        out[y * p.out_w + x] = std::min(p.max, std::max(p.min, acc));
      }
    }
  }
}

F32DwconvC16Fn f32_dwconv_c16_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512 && isa_supported(isa)) return f32_dwconv_c16__avx512;
#endif
  (void)isa;
  return nullptr;
}

}  // namespace nfuse::kernels
