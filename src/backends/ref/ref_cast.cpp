// Reference kernel for Cast and CastLike; the target dtype is the output's (set by infer).
//
// Conversions: float -> integer truncates toward zero, saturates out of range and maps NaN
// to 0 (ONNX leaves these undefined); integer -> narrower integer wraps (numpy astype);
// anything -> bool is `!= 0` (NaN is true); bool -> anything is 0 or 1. Every conversion to a
// floating type rounds once, to nearest even, from the exact source value (f64 -> f16 does
// not round twice through f32; see to_narrow_float).
#include <cmath>
#include <cstring>

#include "backends/ref/ref_cast.h"

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

// d rounded to float "to odd": truncated toward zero with the lowest bit set when inexact.
// Rounding that float to a format with at least 2 fewer significand bits (f16, bf16) then
// gives the correctly rounded result of d, which rounding through a plain float would not.
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

template <typename D>
D to_float_type(double v) {
  if constexpr (std::is_same_v<D, ir::Half>) return ir::Half{ir::float_to_half(round_to_odd_float(v))};
  else if constexpr (std::is_same_v<D, ir::BFloat16>) return ir::BFloat16{ir::float_to_bf16(round_to_odd_float(v))};
  else return static_cast<D>(v);
}

template <typename D, typename S>
D convert(S s) {
  if constexpr (std::is_same_v<D, bool>) {
    return to_double(s) != 0.0;
  } else if constexpr (std::is_same_v<S, bool>) {
    return from_double<D>(s ? 1.0 : 0.0);
  } else if constexpr (is_int_v<S> && is_int_v<D>) {
    return static_cast<D>(s);  // modular since C++20
  } else if constexpr (is_int_v<S> && std::is_floating_point_v<D>) {
    return static_cast<D>(s);  // one rounding, also for 64-bit integers
  } else if constexpr (is_float_v<D>) {
    return to_float_type<D>(to_double(s));
  } else {
    return cast_from_double<D>(to_double(s));
  }
}

Status cast_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  if (x.numel() != y.numel()) return a.error("output does not match the input");
  if (cast_elements(x.dtype(), y.dtype(), x.raw(), y.raw(), 0, static_cast<size_t>(x.numel()))) return ok_status();
  return a.error("cannot cast " + std::string(ir::dtype_name(x.dtype())) + " to " +
                 std::string(ir::dtype_name(y.dtype())));
}

}  // namespace

bool cast_elements(ir::DType from, ir::DType to, const void* in, void* out, size_t begin, size_t end) {
  bool done = false;
  ir::visit_dtype(from, [&]<typename S>() {
    ir::visit_dtype(to, [&]<typename D>() {
      const S* src = static_cast<const S*>(in);
      D* dst = static_cast<D*>(out);
      for (size_t i = begin; i < end; ++i) dst[i] = convert<D, S>(src[i]);
      done = true;
    });
  });
  return done;
}

void register_cast_kernels(KernelRegistry& registry) {
  registry.add("Cast", cast_kernel);
  registry.add("CastLike", cast_kernel);
}

}  // namespace nfuse::backends::ref
