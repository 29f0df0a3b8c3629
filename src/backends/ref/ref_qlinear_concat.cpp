// Reference QLinearConcat (com.microsoft): inputs Y_scale, Y_zp, then (X_i, scale_i, zp_i); each
// element is requantized as quantize(dequantize(x)) (kernels/quant_arithmetic.h) and placed as Concat does.
// 8-bit (ONNX Runtime's) and 16-bit (nfuse's W8A16 graphs) alike.
#include <cstdint>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::ref {
namespace {

template <typename Q>
void run(const KernelArgs& a, int axis) {
  const std::vector<int64_t>& od = a.out(0).dims();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= od[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < od.size(); ++d) inner *= od[d];
  const float y_scale = a.in(0).data<float>()[0];
  const int64_t y_zp = a.in(1).get_int(0);
  Q* out = a.out(0).data<Q>();
  const int64_t out_row = od[static_cast<size_t>(axis)] * inner;
  int64_t offset = 0;
  for (size_t i = 2; i + 2 < a.inputs.size(); i += 3) {
    const ir::Tensor& x = a.in(static_cast<int>(i));
    const float x_scale = a.in(static_cast<int>(i + 1)).data<float>()[0];
    const int64_t x_zp = a.in(static_cast<int>(i + 2)).get_int(0);
    const int64_t row = x.dims()[static_cast<size_t>(axis)] * inner;
    const Q* in = x.data<Q>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < row; ++j) {
        const float f = dequantize_value(in[o * row + j], x_scale, x_zp);
        out[o * out_row + offset + j] = quantize_value<Q>(f, y_scale, y_zp);
      }
    }
    offset += row;
  }
}

Status qlinear_concat(KernelArgs& a) {
  const int rank = a.out(0).rank();
  auto axis = ops::normalize_axis(a.attrs().get_int("axis", 1), rank);
  if (!axis) return a.error("axis out of range");
  if (a.in(0).numel() != 1 || a.in(1).numel() != 1) return a.error("Y_scale and Y_zero_point must be scalars");
  for (size_t i = 2; i + 2 < a.inputs.size(); i += 3) {
    if (a.in(static_cast<int>(i + 1)).numel() != 1 || a.in(static_cast<int>(i + 2)).numel() != 1) {
      return a.error("input scales and zero points must be scalars");
    }
    if (a.in(static_cast<int>(i)).rank() != rank) return a.error("inputs must have the output's rank");
  }
  switch (a.out(0).dtype()) {
    case ir::DType::kU8: run<uint8_t>(a, *axis); break;
    case ir::DType::kI8: run<int8_t>(a, *axis); break;
    case ir::DType::kU16: run<uint16_t>(a, *axis); break;
    case ir::DType::kI16: run<int16_t>(a, *axis); break;
    default: return a.error("Y must be u8, i8, u16 or i16");
  }
  return ok_status();
}

}  // namespace

void register_qlinear_concat_kernels(KernelRegistry& registry) { registry.add("QLinearConcat", qlinear_concat); }

}  // namespace nfuse::backends::ref
