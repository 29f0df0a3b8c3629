// The qs16-dwconv row loop (qs16_dwconv.h), included once per ISA by qs16_dwconv_{scalar,avx2,
// avx512}.cpp inside a namespace of its own: plain C++ loops over column runs that the compiler
// vectorises with that file's flags.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/qs16-dwconv/qs16_dwconv.h"

namespace nfuse::kernels::NFUSE_QS16DW_ISA_NS {
namespace {

constexpr size_t kChunk = 256;  // output columns accumulated at once (on the stack)

// Each tap adds its in-range columns (the range computed once per tap: no per-pixel bounds
// checks), then the requantize, vectorisable: the multiplier is finite and positive, so no NaN;
// clamping before rounding equals clamping after (the bounds are integers); below 2^22 adding
// and subtracting 1.5 * 2^23 rounds to nearest even like nearbyint.
template <typename Acc, bool XUnsigned>
void row(const Qs16DwRow& r, uint16_t* y, size_t ox_begin, size_t ox_end) {
  const Acc xzp = static_cast<Acc>(r.x_zp);
  const ptrdiff_t sw = static_cast<ptrdiff_t>(r.sw), wi = static_cast<ptrdiff_t>(r.w);
  const float lo = static_cast<float>(r.qmin - r.y_zp);
  const float hi = static_cast<float>(r.qmax - r.y_zp);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  Acc acc[kChunk];
  for (size_t c0 = ox_begin; c0 < ox_end; c0 += kChunk) {
    const size_t c1 = std::min(ox_end, c0 + kChunk);
    for (size_t i = 0; i < c1 - c0; ++i) acc[i] = static_cast<Acc>(r.bias);
    for (size_t ky = 0; ky < r.kh; ++ky) {
      const uint16_t* xr = r.rows[ky];
      if (!xr) continue;
      for (size_t kx = 0; kx < r.kw; ++kx) {
        // ix = ox * sw + off inside [0, w) for ox in [lo_x, hi_x).
        const ptrdiff_t off = static_cast<ptrdiff_t>(kx * r.dw) - static_cast<ptrdiff_t>(r.pad_left);
        const ptrdiff_t lo_x = std::max<ptrdiff_t>(static_cast<ptrdiff_t>(c0), off >= 0 ? 0 : (-off + sw - 1) / sw);
        const ptrdiff_t hi_x =
            std::min<ptrdiff_t>(static_cast<ptrdiff_t>(c1), wi - off <= 0 ? 0 : (wi - off - 1) / sw + 1);
        if (lo_x >= hi_x) continue;
        const Acc wv = r.weights[ky * r.kw + kx];
        Acc* a = acc + (lo_x - static_cast<ptrdiff_t>(c0));
        const ptrdiff_t n = hi_x - lo_x;
        const uint16_t* xs = xr + lo_x * sw + off;
        auto value = [](uint16_t bits) {
          return XUnsigned ? static_cast<Acc>(bits) : static_cast<Acc>(static_cast<int16_t>(bits));
        };
        if (sw == 1) {
          for (ptrdiff_t i = 0; i < n; ++i) a[i] += (value(xs[i]) - xzp) * wv;
        } else {
          for (ptrdiff_t i = 0; i < n; ++i) a[i] += (value(xs[i * sw]) - xzp) * wv;
        }
      }
    }
    for (size_t i = 0; i < c1 - c0; ++i) {
      float v = static_cast<float>(acc[i]) * r.mult;
      v = std::min(std::max(v, lo), hi);
      v = (v + kRound) - kRound;
      y[c0 + i] = static_cast<uint16_t>(static_cast<int32_t>(v) + r.y_zp);
    }
  }
}

}  // namespace

// Output columns [ox_begin, ox_end) of the row.
inline void dwconv_cols(const Qs16DwRow& r, uint16_t* y, size_t ox_begin, size_t ox_end) {
  if (r.acc32) {
    r.x_unsigned ? row<int32_t, true>(r, y, ox_begin, ox_end) : row<int32_t, false>(r, y, ox_begin, ox_end);
  } else {
    r.x_unsigned ? row<int64_t, true>(r, y, ox_begin, ox_end) : row<int64_t, false>(r, y, ox_begin, ox_end);
  }
}

inline void dwconv_row(const Qs16DwRow& r, uint16_t* y) { dwconv_cols(r, y, 0, r.wo); }

}  // namespace nfuse::kernels::NFUSE_QS16DW_ISA_NS
