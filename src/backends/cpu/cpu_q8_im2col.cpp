#include "backends/cpu/cpu_q8_im2col.h"

#include <cstring>

namespace nfuse::backends::cpu {

bool is_pointwise_unpadded(const Conv2dGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.ho == g.h &&
         g.wo == g.w;
}

void q8_to_nhwc(const uint8_t* x, size_t hw, size_t cin_g, size_t s0, size_t s1, uint8_t* nhwc) {
  for (size_t s = s0; s < s1; ++s) {
    uint8_t* dst = nhwc + s * cin_g;
    for (size_t c = 0; c < cin_g; ++c) dst[c] = x[c * hw + s];
  }
}

void q8_im2col(const Conv2dGeometry& g, const uint8_t* nhwc, uint8_t pad, size_t p0, size_t p1, uint8_t* cols) {
  const size_t cin_g = g.c / g.group;
  const size_t k = g.kh * g.kw * cin_g;
  for (size_t pi = p0; pi < p1; ++pi) {
    const size_t oy = pi / g.wo, ox = pi % g.wo;
    uint8_t* dst = cols + pi * k;
    for (size_t ky = 0; ky < g.kh; ++ky) {
      const ptrdiff_t iy = static_cast<ptrdiff_t>(oy * g.sh + ky * g.dh) - static_cast<ptrdiff_t>(g.pad_top);
      for (size_t kx = 0; kx < g.kw; ++kx, dst += cin_g) {
        const ptrdiff_t ix = static_cast<ptrdiff_t>(ox * g.sw + kx * g.dw) - static_cast<ptrdiff_t>(g.pad_left);
        if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h) || ix < 0 || ix >= static_cast<ptrdiff_t>(g.w)) {
          std::memset(dst, pad, cin_g);
        } else {
          std::memcpy(dst, nhwc + (static_cast<size_t>(iy) * g.w + static_cast<size_t>(ix)) * cin_g, cin_g);
        }
      }
    }
  }
}

void q8_weights_to_tap_major(const int8_t* w, size_t rows, size_t cin_g, size_t taps, int8_t* out) {
  const size_t k = cin_g * taps;
  for (size_t o = 0; o < rows; ++o)
    for (size_t c = 0; c < cin_g; ++c)
      for (size_t t = 0; t < taps; ++t) out[o * k + t * cin_g + c] = w[o * k + c * taps + t];
}

}  // namespace nfuse::backends::cpu
