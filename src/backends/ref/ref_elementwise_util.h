// Helpers for the element-wise, reduction and softmax reference kernels: checked conversions,
// wrapping integer arithmetic and element-wise map loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_util.h"

namespace nfuse::backends::ref {

template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

inline Status dtype_error(const KernelArgs& a, ir::DType t) {
  return a.error("dtype " + std::string(ir::dtype_name(t)) + " is not supported by this kernel");
}

// double -> T. Integers truncate toward zero and saturate; NaN becomes 0. ONNX leaves
// out-of-range float-to-int conversion undefined: saturation is our definition, and it keeps
// the conversion free of C++ undefined behaviour.
template <typename T>
inline T cast_from_double(double v) {
  if constexpr (is_int_v<T>) {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    // 2^bits as a double is exact; anything at or above it saturates.
    const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return from_double<T>(v);
  }
}


// Wrapping (two's complement) integer arithmetic: signed overflow is undefined in C++, and
// numpy, which produces the ONNX expected outputs, wraps.
template <typename T>
inline T wrap_add(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
template <typename T>
inline T wrap_sub(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
template <typename T>
inline T wrap_mul(T a, T b) { return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
template <typename T>
inline T wrap_neg(T a) { return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(a)); }

// Applies f: double -> double to every element of input 0 into output 0 (same dtype and
// count); floating-point dtypes only. Computing in double rounds once, into the output type.
template <typename F>
Status map_float(KernelArgs& a, F&& f) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) out[i] = from_double<T>(f(to_double(in[i])));
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

// Applies f to every element of input 0 into output 0 for every numeric dtype. f is a generic
// callable taking and returning compute_t<T> (float for 16-bit floats, T otherwise).
template <typename F>
Status map_numeric(KernelArgs& a, F&& f) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) out[i] = store<T>(f(load(in[i])));
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

}  // namespace nfuse::backends::ref
