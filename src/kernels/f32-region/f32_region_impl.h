// The f32-region step loop (f32_region.h), included once per ISA by f32_region_{scalar,avx2,
// avx512}.cpp inside a namespace of its own: plain loops the compiler vectorises with that file's
// flags (and -fno-trapping-math, so the clamps become min / max instructions).
#include <algorithm>
#include <cmath>

#include "kernels/f32-region/f32_region.h"

namespace nfuse::kernels::NFUSE_REGION_ISA_NS {
namespace {

// f(x) in double from the f32 input, rounded once to f32.
template <typename F>
void map_double(const float* x, float* y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(f(static_cast<double>(x[i])));
}

template <typename F>
void binary(const float* a, float a_const, bool a_is_const, const float* b, float b_const, bool b_is_const, float* y,
            size_t n, F f) {
  if (a_is_const) {
    for (size_t i = 0; i < n; ++i) y[i] = f(a_const, b_is_const ? b_const : b[i]);
  } else if (b_is_const) {
    for (size_t i = 0; i < n; ++i) y[i] = f(a[i], b_const);
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  }
}

}  // namespace

inline void eval(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n) {
  for (size_t i = 0; i < count; ++i) {
    const RegionStep& s = steps[i];
    float* y = slots[i + 1];
    const bool a_const = s.a < 0, b_const = s.b < 0;
    const float* a = a_const ? nullptr : slots[s.a];
    const float* b = b_const ? nullptr : slots[s.b];
    const float ac = a_const ? consts[-s.a - 1] : 0.0f, bc = b_const ? consts[-s.b - 1] : 0.0f;
    switch (s.op) {
      case RegionOp::kAdd: binary(a, ac, a_const, b, bc, b_const, y, n, [](float p, float q) { return p + q; }); break;
      case RegionOp::kSub: binary(a, ac, a_const, b, bc, b_const, y, n, [](float p, float q) { return p - q; }); break;
      case RegionOp::kMul: binary(a, ac, a_const, b, bc, b_const, y, n, [](float p, float q) { return p * q; }); break;
      case RegionOp::kDiv: binary(a, ac, a_const, b, bc, b_const, y, n, [](float p, float q) { return p / q; }); break;
      case RegionOp::kMax:  // NaN propagates, as ref's (numpy's) maximum
        binary(a, ac, a_const, b, bc, b_const, y, n,
               [](float p, float q) { return std::isnan(p) || std::isnan(q) ? std::nanf("") : std::max(p, q); });
        break;
      case RegionOp::kMin:
        binary(a, ac, a_const, b, bc, b_const, y, n,
               [](float p, float q) { return std::isnan(p) || std::isnan(q) ? std::nanf("") : std::min(p, q); });
        break;
      case RegionOp::kClip:
        for (size_t j = 0; j < n; ++j) y[j] = std::min(std::max(a[j], s.p0), s.p1);
        break;
      case RegionOp::kRelu:  // NaN stays NaN
        for (size_t j = 0; j < n; ++j) y[j] = a[j] < 0.0f ? 0.0f : a[j];
        break;
      case RegionOp::kLeakyRelu: {
        const double alpha = s.p0;
        map_double(a, y, n, [alpha](double x) { return x < 0 ? alpha * x : x; });
        break;
      }
      case RegionOp::kHardSigmoid: {
        const double alpha = s.p0, beta = s.p1;
        map_double(a, y, n, [alpha, beta](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); });
        break;
      }
      case RegionOp::kHardSwish:
        map_double(a, y, n, [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); });
        break;
      case RegionOp::kSigmoid: map_double(a, y, n, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }); break;
      case RegionOp::kTanh: map_double(a, y, n, [](double x) { return std::tanh(x); }); break;
      case RegionOp::kNeg:
        for (size_t j = 0; j < n; ++j) y[j] = -a[j];
        break;
      case RegionOp::kAbs:
        for (size_t j = 0; j < n; ++j) y[j] = std::fabs(a[j]);
        break;
      case RegionOp::kIdentity: std::copy(a, a + n, y); break;
      case RegionOp::kMulAdd: {  // the Mul step, then the Add step: two roundings (no contraction)
        const float bv = consts[-s.b - 1], cv = consts[-s.c - 1];
        for (size_t j = 0; j < n; ++j) y[j] = a[j] * bv + cv;
        break;
      }
      case RegionOp::kAddClipMulDiv: {  // the Add, Clip, Mul and Div steps, rounded as each is
        const float bv = consts[-s.b - 1], cv = consts[-s.c - 1];
        for (size_t j = 0; j < n; ++j) y[j] = (a[j] * std::min(std::max(a[j] + bv, s.p0), s.p1)) / cv;
        break;
      }
      case RegionOp::kNop: break;
    }
  }
}

}  // namespace nfuse::kernels::NFUSE_REGION_ISA_NS
