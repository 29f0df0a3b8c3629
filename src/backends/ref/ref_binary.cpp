// Reference kernels for broadcasting arithmetic. Floats compute in double and round once;
// integers wrap (two's complement) like numpy.
//
// Integer division and remainder by zero have no ONNX-defined result; we define both as 0
// so a model cannot crash the process. INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0.
#include <cmath>
#include <limits>
#include <string>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"
#include "ops/elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

enum class Arith { kAdd, kSub, kMul, kDiv, kMod, kFMod, kShiftLeft, kShiftRight };

template <typename T>
T int_div(T x, T y) {
  if (y == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return wrap_neg(x);
  }
  return static_cast<T>(x / y);
}

// Remainder with the sign of the dividend (C fmod) or, for kMod, of the divisor (Python).
template <Arith K, typename T>
T int_mod(T x, T y) {
  if (y == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return 0;
    T r = static_cast<T>(x % y);
    if (K == Arith::kMod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
    return r;
  } else {
    return static_cast<T>(x % y);
  }
}

template <Arith K>
double float_arith(double x, double y) {
  switch (K) {
    case Arith::kAdd: return x + y;
    case Arith::kSub: return x - y;
    case Arith::kMul: return x * y;
    case Arith::kDiv: return x / y;
    case Arith::kFMod: return std::fmod(x, y);
    case Arith::kMod: {
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    default: return 0.0;  // shifts are integer-only (rejected before)
  }
}

template <Arith K, typename T>
T int_arith(T x, T y) {
  switch (K) {
    case Arith::kAdd: return wrap_add(x, y);
    case Arith::kSub: return wrap_sub(x, y);
    case Arith::kMul: return wrap_mul(x, y);
    case Arith::kDiv: return int_div(x, y);
    case Arith::kMod:
    case Arith::kFMod: return int_mod<K>(x, y);
    case Arith::kShiftLeft:
    case Arith::kShiftRight: {
      // Shifting by the width or more is undefined in C++; every bit is shifted out: 0.
      if (static_cast<uint64_t>(y) >= sizeof(T) * 8) return 0;
      const uint64_t ux = static_cast<uint64_t>(x);
      return static_cast<T>(K == Arith::kShiftLeft ? ux << y : ux >> y);
    }
  }
  return 0;
}

// Input 1's dims as they broadcast: numpy rules, or the pre-opset-7 attribute form.
Result<std::vector<int64_t>> second_input_dims(const KernelArgs& a) {
  if (!ops::uses_legacy_broadcast(a.node)) return a.in(1).dims();
  return ops::legacy_broadcast_dims(a.node, a.in(0).dims(), a.in(1).dims());
}

template <Arith K>
Status arith_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& y = a.in(1);
  ir::Tensor& z = a.out(0);
  if (x.dtype() != y.dtype()) return a.error("inputs differ in dtype");
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> y_dims, second_input_dims(a));
  if (!broadcasts_to(x.dims(), z.dims()) || !broadcasts_to(y_dims, z.dims())) {
    return a.error("inputs do not broadcast to the output shape");
  }
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    constexpr bool kShift = K == Arith::kShiftLeft || K == Arith::kShiftRight;
    if constexpr (!std::is_same_v<T, bool> && !(kShift && !std::is_unsigned_v<T>)) {
      const T* xs = x.data<T>();
      const T* ys = y.data<T>();
      T* out = z.data<T>();
      for_each_broadcast(z.dims(), {x.dims(), y_dims}, [&](int64_t i, const std::vector<int64_t>& off) {
        if constexpr (is_float_v<T>) {
          out[i] = from_double<T>(float_arith<K>(to_double(xs[off[0]]), to_double(ys[off[1]])));
        } else {
          out[i] = int_arith<K, T>(xs[off[0]], ys[off[1]]);
        }
      });
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

Status mod_kernel(KernelArgs& a) {
  return a.attrs().get_int("fmod", 0) != 0 ? arith_kernel<Arith::kFMod>(a) : arith_kernel<Arith::kMod>(a);
}

Status bitshift_kernel(KernelArgs& a) {
  const std::string dir = a.attrs().get_string("direction", "");
  if (dir == "LEFT") return arith_kernel<Arith::kShiftLeft>(a);
  if (dir == "RIGHT") return arith_kernel<Arith::kShiftRight>(a);
  return a.error("direction must be LEFT or RIGHT");
}

// Integer base, integer exponent: exact, wrapping repeated squaring. A negative exponent
// gives the truncated 1 / x^-e: 1 for x == 1, +-1 for x == -1, 0 otherwise (x == 0 included).
template <typename T>
T int_pow(T base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e % 2 == 0) ? T(1) : T(-1);
    }
    return 0;
  }
  T result = 1;
  while (e > 0) {
    if (e & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

Status pow_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& y = a.in(1);
  ir::Tensor& z = a.out(0);
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> y_dims, second_input_dims(a));
  if (!broadcasts_to(x.dims(), z.dims()) || !broadcasts_to(y_dims, z.dims())) {
    return a.error("inputs do not broadcast to the output shape");
  }
  const bool int_exponent = ir::dtype_is_integer(y.dtype());
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xs = x.data<T>();
      T* out = z.data<T>();
      for_each_broadcast(z.dims(), {x.dims(), y_dims}, [&](int64_t i, const std::vector<int64_t>& off) {
        if constexpr (is_int_v<T>) {
          if (int_exponent) {
            out[i] = int_pow(xs[off[0]], y.get_int(off[1]));
            return;
          }
        }
        out[i] = cast_from_double<T>(std::pow(to_double(xs[off[0]]), y.get_double(off[1])));
      });
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

enum class Variadic { kMin, kMax, kSum, kMean };

template <Variadic K>
Status variadic_kernel(KernelArgs& a) {
  ir::Tensor& z = a.out(0);
  std::vector<std::vector<int64_t>> dims;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    if (!a.has_in(static_cast<int>(k)) || a.in(static_cast<int>(k)).dtype() != z.dtype()) {
      return a.error("every input must be present and of the output's dtype");
    }
    dims.push_back(a.in(static_cast<int>(k)).dims());
    if (!broadcasts_to(dims.back(), z.dims())) return a.error("inputs do not broadcast to the output shape");
  }
  const size_t n = dims.size();
  bool done = false;
  ir::visit_dtype(z.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      T* out = z.data<T>();
      for_each_broadcast(z.dims(), dims, [&](int64_t i, const std::vector<int64_t>& off) {
        auto at = [&](size_t k) { return a.in(static_cast<int>(k)).template data<T>()[off[k]]; };
        if constexpr (is_float_v<T>) {
          double acc = to_double(at(0));
          for (size_t k = 1; k < n; ++k) {
            const double v = to_double(at(k));
            if (K == Variadic::kSum || K == Variadic::kMean) acc += v;
            else if (std::isnan(v) || std::isnan(acc)) acc = std::nan("");  // numpy propagates NaN
            else if (K == Variadic::kMin) acc = std::min(acc, v);
            else acc = std::max(acc, v);
          }
          if (K == Variadic::kMean) acc /= static_cast<double>(n);
          out[i] = from_double<T>(acc);
        } else {
          T acc = at(0);
          for (size_t k = 1; k < n; ++k) {
            if (K == Variadic::kSum || K == Variadic::kMean) acc = wrap_add(acc, at(k));
            else if (K == Variadic::kMin) acc = std::min(acc, at(k));
            else acc = std::max(acc, at(k));
          }
          if (K == Variadic::kMean) {  // truncates, in 64 bits so the count cannot wrap
            if constexpr (std::is_signed_v<T>) acc = static_cast<T>(static_cast<int64_t>(acc) / static_cast<int64_t>(n));
            else acc = static_cast<T>(static_cast<uint64_t>(acc) / n);
          }
          out[i] = acc;
        }
      });
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, z.dtype());
}

}  // namespace

void register_binary_kernels(KernelRegistry& registry) {
  registry.add("Add", arith_kernel<Arith::kAdd>);
  registry.add("Sub", arith_kernel<Arith::kSub>);
  registry.add("Mul", arith_kernel<Arith::kMul>);
  registry.add("Div", arith_kernel<Arith::kDiv>);
  registry.add("Mod", mod_kernel);
  registry.add("BitShift", bitshift_kernel);
  registry.add("Pow", pow_kernel);
  registry.add("Min", variadic_kernel<Variadic::kMin>);
  registry.add("Max", variadic_kernel<Variadic::kMax>);
  registry.add("Sum", variadic_kernel<Variadic::kSum>);
  registry.add("Mean", variadic_kernel<Variadic::kMean>);
}

}  // namespace nfuse::backends::ref
