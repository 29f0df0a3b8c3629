// Reference kernels for element-wise unary math.
#include <cmath>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

enum class MathOp { kSqrt, kExp, kLog, kReciprocal, kFloor, kCeil, kRound, kSin, kCos, kTan, kAsin, kAcos,
                    kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kErf };

template <MathOp kOp>
double apply(double x) {
  switch (kOp) {
    case MathOp::kSqrt: return std::sqrt(x);
    case MathOp::kExp: return std::exp(x);
    case MathOp::kLog: return std::log(x);
    case MathOp::kReciprocal: return 1.0 / x;
    case MathOp::kFloor: return std::floor(x);
    case MathOp::kCeil: return std::ceil(x);
    // nearbyint rounds in the current mode, which is round-half-to-even unless changed.
    case MathOp::kRound: return std::nearbyint(x);
    case MathOp::kSin: return std::sin(x);
    case MathOp::kCos: return std::cos(x);
    case MathOp::kTan: return std::tan(x);
    case MathOp::kAsin: return std::asin(x);
    case MathOp::kAcos: return std::acos(x);
    case MathOp::kAtan: return std::atan(x);
    case MathOp::kSinh: return std::sinh(x);
    case MathOp::kCosh: return std::cosh(x);
    case MathOp::kAsinh: return std::asinh(x);
    case MathOp::kAcosh: return std::acosh(x);
    case MathOp::kAtanh: return std::atanh(x);
    case MathOp::kErf: return std::erf(x);
  }
  return x;
}

template <MathOp kOp>
Status math_kernel(KernelArgs& a) {
  return map_float(a, apply<kOp>);
}

// Erf also accepts integer tensors: computed in double and truncated back.
Status erf_kernel(KernelArgs& a) {
  if (ir::dtype_is_float(a.in(0).dtype())) return map_float(a, apply<MathOp::kErf>);
  const ir::Tensor& x = a.in(0);
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (is_int_v<T>) {
      for (int64_t i = 0; i < x.numel(); ++i)
        a.out(0).data<T>()[i] = cast_from_double<T>(std::erf(static_cast<double>(x.data<T>()[i])));
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

Status abs_kernel(KernelArgs& a) {
  return map_numeric(a, [](auto v) -> decltype(v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) return std::fabs(v);
    else if constexpr (std::is_signed_v<C>) return v < 0 ? wrap_neg(v) : v;  // |INT_MIN| wraps
    else return v;
  });
}

Status neg_kernel(KernelArgs& a) {
  return map_numeric(a, [](auto v) -> decltype(v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) return -v;
    else return wrap_neg(v);
  });
}

Status sign_kernel(KernelArgs& a) {
  return map_numeric(a, [](auto v) -> decltype(v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return v;
    }
    if constexpr (std::is_unsigned_v<C>) return static_cast<C>(v > 0 ? 1 : 0);
    else return static_cast<C>(v > C(0) ? 1 : (v < C(0) ? -1 : 0));
  });
}

// Writes pred(x) for every element of a float input into a bool output.
template <typename Pred>
Status float_predicate(KernelArgs& a, Pred pred) {
  const ir::Tensor& x = a.in(0);
  bool* out = a.out(0).data<bool>();
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      for (int64_t i = 0; i < x.numel(); ++i) out[i] = pred(to_double(x.data<T>()[i]));
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

Status isnan_kernel(KernelArgs& a) {
  return float_predicate(a, [](double v) { return std::isnan(v); });
}

Status isinf_kernel(KernelArgs& a) {
  const bool neg = a.attrs().get_int("detect_negative", 1) != 0;
  const bool pos = a.attrs().get_int("detect_positive", 1) != 0;
  return float_predicate(a, [neg, pos](double v) { return std::isinf(v) && (v > 0 ? pos : neg); });
}

}  // namespace

void register_unary_kernels(KernelRegistry& registry) {
  registry.add("Sqrt", math_kernel<MathOp::kSqrt>);
  registry.add("Exp", math_kernel<MathOp::kExp>);
  registry.add("Log", math_kernel<MathOp::kLog>);
  registry.add("Reciprocal", math_kernel<MathOp::kReciprocal>);
  registry.add("Floor", math_kernel<MathOp::kFloor>);
  registry.add("Ceil", math_kernel<MathOp::kCeil>);
  registry.add("Round", math_kernel<MathOp::kRound>);
  registry.add("Sin", math_kernel<MathOp::kSin>);
  registry.add("Cos", math_kernel<MathOp::kCos>);
  registry.add("Tan", math_kernel<MathOp::kTan>);
  registry.add("Asin", math_kernel<MathOp::kAsin>);
  registry.add("Acos", math_kernel<MathOp::kAcos>);
  registry.add("Atan", math_kernel<MathOp::kAtan>);
  registry.add("Sinh", math_kernel<MathOp::kSinh>);
  registry.add("Cosh", math_kernel<MathOp::kCosh>);
  registry.add("Asinh", math_kernel<MathOp::kAsinh>);
  registry.add("Acosh", math_kernel<MathOp::kAcosh>);
  registry.add("Atanh", math_kernel<MathOp::kAtanh>);
  registry.add("Erf", erf_kernel);
  registry.add("Abs", abs_kernel);
  registry.add("Neg", neg_kernel);
  registry.add("Sign", sign_kernel);
  registry.add("IsNaN", isnan_kernel);
  registry.add("IsInf", isinf_kernel);
}

}  // namespace nfuse::backends::ref
