// The portable 16-bit table lookup (x16_lut.h).
#include "kernels/x16-lut/x16_lut.h"

namespace nfuse::kernels {

void x16_lut__scalar_u8(const uint16_t* x, uint16_t* y, size_t n, const uint16_t* table) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {  // independent loads: the table reads overlap
    uint16_t v[8];
    for (size_t j = 0; j < 8; ++j) v[j] = table[x[i + j]];
    for (size_t j = 0; j < 8; ++j) y[i + j] = v[j];
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace nfuse::kernels
