// Reference QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear. The arithmetic is the
// definition in kernels/quant_arithmetic.h (f32 division, round half to even, saturation).
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::ref {
namespace {

// Element i of x uses scale/zero point number (i / inner) % count: count = 1 per tensor, or the
// size of the quantization axis per axis.
struct QuantIndex {
  int64_t count = 1;
  int64_t inner = 1;
  int64_t at(int64_t i) const { return (i / inner) % count; }
};

Result<QuantIndex> quant_index(const KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& scale = a.in(1);
  QuantIndex q;
  if (a.has_in(2) && a.in(2).numel() != scale.numel()) {
    return a.error("zero point and scale must have the same number of elements");
  }
  if (scale.numel() == 1) return q;
  if (scale.rank() != 1) return a.error("a per-axis scale must be 1-D");
  auto axis = ops::normalize_axis(a.attrs().get_int("axis", 1), x.rank());
  if (!axis) return a.error("attribute 'axis' is out of range");
  if (x.dim(*axis) != scale.numel()) {
    return a.error("scale has " + std::to_string(scale.numel()) + " elements but axis " + std::to_string(*axis) +
                   " has " + std::to_string(x.dim(*axis)));
  }
  q.count = scale.numel();
  q.inner = product(std::vector<int64_t>(x.dims().begin() + *axis + 1, x.dims().end()));
  return q;
}

std::vector<int64_t> zero_points(const KernelArgs& a) {
  return a.has_in(2) ? to_int64s(a.in(2)) : std::vector<int64_t>(static_cast<size_t>(a.in(1).numel()), 0);
}

std::vector<float> floats_of(const ir::Tensor& t) { return t.to_float_vector(); }

Status quantize_linear(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(QuantIndex q, quant_index(a));
  const std::vector<float> x = floats_of(a.in(0)), scale = floats_of(a.in(1));
  const std::vector<int64_t> zp = zero_points(a);
  ir::Tensor& out = a.out(0);
  bool ok = true;
  ir::visit_dtype(out.dtype(), [&]<typename Q>() {
    if constexpr (std::is_integral_v<Q> && !std::is_same_v<Q, bool> && sizeof(Q) <= 2) {
      Q* y = out.data<Q>();
      for (size_t i = 0; i < x.size(); ++i) {
        const auto p = static_cast<size_t>(q.at(static_cast<int64_t>(i)));
        y[i] = quantize_value<Q>(x[i], scale[p], zp[p]);
      }
    } else {
      ok = false;
    }
  });
  return ok ? ok_status() : a.error("unsupported output dtype");
}

Status dequantize_linear(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(QuantIndex q, quant_index(a));
  const std::vector<int64_t> x = to_int64s(a.in(0));
  const std::vector<float> scale = floats_of(a.in(1));
  const std::vector<int64_t> zp = zero_points(a);
  ir::Tensor& out = a.out(0);
  for (size_t i = 0; i < x.size(); ++i) {
    const auto p = static_cast<size_t>(q.at(static_cast<int64_t>(i)));
    ir::store_from_double(out.dtype(), out.raw(), static_cast<int64_t>(i), dequantize_value(x[i], scale[p], zp[p]));
  }
  return ok_status();
}

// u8 quantization of x with a range that always includes 0 (ONNX's definition):
//   scale = (max(0, max x) - min(0, min x)) / 255, zero_point = saturate(round(0 - min / scale)),
//   y = saturate(round(x / scale) + zero_point), all in f32.
// All-zero (or empty) x gives scale 0: then zero_point = 0 and y = 0 rather than NaNs.
Status dynamic_quantize_linear(KernelArgs& a) {
  const std::vector<float> x = floats_of(a.in(0));
  const DynamicQuantParams q = dynamic_quant_params_of(x.data(), x.size());
  const float scale = q.scale;
  const uint8_t zp = q.zero_point;
  uint8_t* y = a.out(0).data<uint8_t>();
  for (size_t i = 0; i < x.size(); ++i) y[i] = scale != 0.0f ? quantize_value<uint8_t>(x[i], scale, zp) : 0;
  a.out(1).data<float>()[0] = scale;
  a.out(2).data<uint8_t>()[0] = zp;
  return ok_status();
}

}  // namespace

void register_quantize_kernels(KernelRegistry& registry) {
  registry.add("QuantizeLinear", quantize_linear);
  registry.add("DequantizeLinear", dequantize_linear);
  registry.add("DynamicQuantizeLinear", dynamic_quantize_linear);
}

}  // namespace nfuse::backends::ref
