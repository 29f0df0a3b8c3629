// Reference QLinearAdd and QLinearMul (com.microsoft): per-tensor u8/i8 operands with numpy
// broadcasting; the arithmetic is qlinear_add_value / qlinear_mul_value of kernels/quant_arithmetic.h,
// and for nfuse's u16/i16 form qlinear16_binary_value of the dequantized operands.
#include <cstdint>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::ref {
namespace {

// The per-tensor scale at input `s` and the zero point at `zp` (0 when omitted).
struct TensorQ {
  float scale = 1.0f;
  int32_t zp = 0;
};

Result<TensorQ> tensor_q(const KernelArgs& a, int s, int zp) {
  if (!a.has_in(s) || a.in(s).numel() != 1) return a.error("scale input " + std::to_string(s) + " must be a scalar");
  if (a.has_in(zp) && a.in(zp).numel() != 1) return a.error("zero point input " + std::to_string(zp) + " must be a scalar");
  return TensorQ{a.in(s).data<float>()[0], a.has_in(zp) ? static_cast<int32_t>(a.in(zp).get_int(0)) : 0};
}

template <typename Q, bool kMul>
void run(const KernelArgs& a, const TensorQ& qa, const TensorQ& qb, const TensorQ& qy) {
  const Q* x = a.in(0).data<Q>();
  const Q* y = a.in(3).data<Q>();
  Q* out = a.out(0).data<Q>();
  const float ma = qa.scale / qy.scale, mb = qb.scale / qy.scale;
  const float m = requant_multiplier(qa.scale, qb.scale, qy.scale);
  for_each_broadcast(a.out(0).dims(), {a.in(0).dims(), a.in(3).dims()},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       const int32_t ac = static_cast<int32_t>(x[off[0]]) - qa.zp;
                       const int32_t bc = static_cast<int32_t>(y[off[1]]) - qb.zp;
                       const float v = kMul ? qlinear_mul_value(ac, bc, m) : qlinear_add_value(ac, bc, ma, mb);
                       out[i] = quantize_value<Q>(v, 1.0f, qy.zp);
                     });
}

template <typename Q, bool kMul>
void run16(const KernelArgs& a, const TensorQ& qa, const TensorQ& qb, const TensorQ& qy) {
  const Q* x = a.in(0).data<Q>();
  const Q* y = a.in(3).data<Q>();
  Q* out = a.out(0).data<Q>();
  for_each_broadcast(a.out(0).dims(), {a.in(0).dims(), a.in(3).dims()},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       const float av = dequantize_value(x[off[0]], qa.scale, qa.zp);
                       const float bv = dequantize_value(y[off[1]], qb.scale, qb.zp);
                       out[i] = quantize_value<Q>(qlinear16_binary_value(kMul, av, bv), qy.scale, qy.zp);
                     });
}

template <bool kMul>
Status qlinear_binary(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(TensorQ qa, tensor_q(a, 1, 2));
  NFUSE_ASSIGN_OR_RETURN(TensorQ qb, tensor_q(a, 4, 5));
  NFUSE_ASSIGN_OR_RETURN(TensorQ qy, tensor_q(a, 6, 7));
  if (!broadcasts_to(a.in(0).dims(), a.out(0).dims()) || !broadcasts_to(a.in(3).dims(), a.out(0).dims())) {
    return a.error("A and B do not broadcast to the output shape");
  }
  switch (a.in(0).dtype()) {
    case ir::DType::kU8: run<uint8_t, kMul>(a, qa, qb, qy); break;
    case ir::DType::kI8: run<int8_t, kMul>(a, qa, qb, qy); break;
    case ir::DType::kU16: run16<uint16_t, kMul>(a, qa, qb, qy); break;
    case ir::DType::kI16: run16<int16_t, kMul>(a, qa, qb, qy); break;
    default: return a.error("A must be u8, i8, u16 or i16");
  }
  return ok_status();
}

}  // namespace

void register_qlinear_binary_kernels(KernelRegistry& registry) {
  registry.add("QLinearAdd", qlinear_binary<false>);
  registry.add("QLinearMul", qlinear_binary<true>);
}

}  // namespace nfuse::backends::ref
