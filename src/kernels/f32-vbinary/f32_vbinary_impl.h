// The f32-vbinary loops, included once per ISA by f32_vbinary_{scalar,avx2,avx512}.cpp (each
// compiled with its own flags) inside a namespace of its own, so each ISA gets its own
// vectorised copy. Plain loops over contiguous arrays, which GCC and Clang vectorise at -O3.
#include <cstddef>

#include "kernels/f32-vbinary/f32_vbinary.h"

namespace nfuse::kernels::NFUSE_VBINARY_ISA_NS {

template <F32BinaryOp Op>
inline float apply(float a, float b) {
  if constexpr (Op == F32BinaryOp::kAdd) return a + b;
  if constexpr (Op == F32BinaryOp::kSub) return a - b;
  if constexpr (Op == F32BinaryOp::kMul) return a * b;
  if constexpr (Op == F32BinaryOp::kDiv) return a / b;
  // Compare-and-select forms the compilers vectorise (vcmpps + blend); a NaN operand yields NaN.
  const bool nan = a != a || b != b;
  if constexpr (Op == F32BinaryOp::kMax) return nan ? a + b : (a < b ? b : a);
  return nan ? a + b : (b < a ? b : a);
}

// __restrict is not used: y may alias a or b exactly (in place), which the loops allow since
// element i is read before it is written and no other element is touched.
template <F32BinaryOp Op>
void vop(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = apply<Op>(a[i], b[i]);
}

template <F32BinaryOp Op>
void vopc(const float* a, float b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = apply<Op>(a[i], b);
}

template <F32BinaryOp Op>
void vropc(const float* a, float b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = apply<Op>(b, a[i]);
}

inline void vaffine(const float* x, float s, float t, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float p = x[i] * s;  // rounded on its own: the file is built with -ffp-contract=off
    y[i] = p + t;
  }
}

inline const F32VbinaryConfig& config() {
  using O = F32BinaryOp;
  static constexpr F32VbinaryConfig kConfig{
      {vop<O::kAdd>, vop<O::kSub>, vop<O::kMul>, vop<O::kDiv>, vop<O::kMax>, vop<O::kMin>},
      {vopc<O::kAdd>, vopc<O::kSub>, vopc<O::kMul>, vopc<O::kDiv>, vopc<O::kMax>, vopc<O::kMin>},
      {vopc<O::kAdd>, vropc<O::kSub>, vopc<O::kMul>, vropc<O::kDiv>, vropc<O::kMax>, vropc<O::kMin>},
      vaffine};
  return kConfig;
}

}  // namespace nfuse::kernels::NFUSE_VBINARY_ISA_NS
