// Reference com.microsoft QLinearSigmoid / QLinearLeakyRelu (ops/qlinear_contrib.cpp): the
// element-wise nfuse DequantizeLinear, the ref Sigmoid / LeakyRelu formula in double rounded to
// f32 (as ref_activation.cpp), and QuantizeLinear, element by element.
#include <cmath>
#include <cstdint>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::ref {
namespace {

template <typename F>
Status qlinear_unary(KernelArgs& a, F&& f) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  if ((x.dtype() != ir::DType::kU8 && x.dtype() != ir::DType::kI8) || y.dtype() != x.dtype()) {
    return a.error("X and Y must be u8 or s8 of the same type");
  }
  for (int i = 1; i < static_cast<int>(a.inputs.size()); ++i) {
    if (a.has_in(i) && a.in(i).numel() != 1) return a.error("scales and zero points must be scalars");
  }
  const float xs = static_cast<float>(a.in(1).get_double(0));
  const int64_t xz = a.has_in(2) ? a.in(2).get_int(0) : 0;
  const float ys = static_cast<float>(a.in(3).get_double(0));
  const int64_t yz = a.has_in(4) ? a.in(4).get_int(0) : 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = static_cast<float>(f(static_cast<double>(dequantize_value(x.get_int(i), xs, xz))));
    if (y.dtype() == ir::DType::kU8) {
      y.data<uint8_t>()[i] = quantize_value<uint8_t>(v, ys, yz);
    } else {
      y.data<int8_t>()[i] = quantize_value<int8_t>(v, ys, yz);
    }
  }
  return ok_status();
}

Status qlinear_sigmoid(KernelArgs& a) {
  return qlinear_unary(a, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}

Status qlinear_leaky_relu(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 0.01f);
  return qlinear_unary(a, [alpha](double x) { return x < 0 ? alpha * x : x; });
}

}  // namespace

void register_qlinear_contrib_kernels(KernelRegistry& registry) {
  registry.add("QLinearSigmoid", qlinear_sigmoid);
  registry.add("QLinearLeakyRelu", qlinear_leaky_relu);
}

}  // namespace nfuse::backends::ref
