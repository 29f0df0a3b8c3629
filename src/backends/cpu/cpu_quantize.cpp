// QuantizeLinear / DequantizeLinear on the cpu backend for the per-tensor case QDQ graphs carry
// at their float boundaries (graph input, the tensors a float op reads or writes): f32 <-> u8 /
// s8 / u16 / s16 with a constant one-element scale and zero point. Per-axis and blocked forms,
// and non-constant parameters, run on the reference kernel.
// Bit-exact with kernels/quant_arithmetic.h: quantization on the f32-qvcvt kernels (AVX-512,
// AVX2, scalar; the SSE2 loops they replaced took 3-7% of a W8A16 detector), dequantization on
// the q-dequant kernels (AVX-512, AVX2, scalar; the SSE2 loop took ~5% of the W8A16 detector):
//   quantize:   v = x / scale (an f32 division, as the reference: a multiply by the reciprocal
//               would round differently), clamped to [qmin - zp, qmax - zp] (integers, so
//               clamping before rounding equals saturating after it), rounded half to even by
//               adding and subtracting 1.5 * 2^23 (exact for |v| <= 2^22, which the clamp
//               guarantees), plus zp; NaN becomes 0 before the clamp, so it quantizes to zp.
//   dequantize: f32(q - zp) * scale.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cpu/cpu_op.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/q-dequant/q_dequant.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kTaskElems = 32768;

template <typename Q>
class QuantizeOp final : public CpuOp {
 public:
  QuantizeOp(float scale, int32_t zp) : scale_(scale), zp_(zp) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    const float* x = t.inputs[0]->data<float>();
    Q* y = t.outputs[0]->data<Q>();
    static_assert(sizeof(Q) == 1 || sizeof(Q) == 2);
    if constexpr (sizeof(Q) == 1) {  // the f32-qvcvt kernels
      const kernels::F32QuantizeParams p = kernels::f32_quantize_params(scale_, zp_, std::is_signed_v<Q>);
      const kernels::F32QuantizeFn fn = kernels::f32_quantize_q8_select(kernels::selected_isa());
      rc.pool.run((n + kTaskElems - 1) / kTaskElems, [&](size_t i, size_t) {
        const size_t b0 = i * kTaskElems;
        fn(x + b0, std::min(kTaskElems, n - b0), p, reinterpret_cast<uint8_t*>(y) + b0);
      });
    } else {  // the 16-bit f32-qvcvt kernels
      const kernels::F32QuantizeParams p = kernels::f32_quantize_params(scale_, zp_, std::is_signed_v<Q>, 16);
      const kernels::F32Quantize16Fn fn = kernels::f32_quantize_q16_select(kernels::selected_isa());
      rc.pool.run((n + kTaskElems - 1) / kTaskElems, [&](size_t i, size_t) {
        const size_t b0 = i * kTaskElems;
        fn(x + b0, std::min(kTaskElems, n - b0), p, reinterpret_cast<uint16_t*>(y) + b0);
      });
    }
    return ok_status();
  }

 private:
  float scale_;
  int32_t zp_;
};

template <typename Q>
class DequantizeOp final : public CpuOp {
 public:
  DequantizeOp(float scale, int32_t zp) : scale_(scale), zp_(zp) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    const Q* x = t.inputs[0]->data<Q>();
    float* y = t.outputs[0]->data<float>();
    static_assert(sizeof(Q) == 1 || sizeof(Q) == 2);
    // Signed input runs as unsigned with its sign bit flipped and the zero point moved by the
    // same offset: the same integer q - zp.
    constexpr bool kSigned = std::is_signed_v<Q>;
    constexpr int32_t kOffset = kSigned ? (sizeof(Q) == 1 ? 128 : 32768) : 0;
    const int32_t zp = zp_ + kOffset;
    const kernels::QDequantizeKernels k = kernels::q_dequantize_select(kernels::selected_isa());
    rc.pool.run((n + kTaskElems - 1) / kTaskElems, [&](size_t i, size_t) {
      const size_t b0 = i * kTaskElems, len = std::min(kTaskElems, n - b0);
      if constexpr (sizeof(Q) == 1) {
        k.q8(reinterpret_cast<const uint8_t*>(x) + b0, len, kSigned ? 0x80 : 0, zp, scale_, y + b0);
      } else {
        k.q16(reinterpret_cast<const uint16_t*>(x) + b0, len, kSigned ? 0x8000 : 0, zp, scale_, y + b0);
      }
    });
    return ok_status();
  }

 private:
  float scale_;
  int32_t zp_;
};

const ir::Tensor* scalar_constant(const ir::Value* v) {
  return v && v->constant && v->constant->numel() == 1 ? &*v->constant : nullptr;
}

template <template <typename> class Op>
std::unique_ptr<CpuOp> make_typed(ir::DType q, float scale, int32_t zp) {
  switch (q) {
    case ir::DType::kU8: return std::make_unique<Op<uint8_t>>(scale, zp);
    case ir::DType::kI8: return std::make_unique<Op<int8_t>>(scale, zp);
    case ir::DType::kI16: return std::make_unique<Op<int16_t>>(scale, zp);
    case ir::DType::kU16: return std::make_unique<Op<uint16_t>>(scale, zp);
    default: return nullptr;
  }
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_quantize_linear(const ir::Node& node, const CompileContext&) {
  const bool quantize = node.op_type == "QuantizeLinear";
  if (node.attrs.get_int("block_size", 0) != 0 || node.num_outputs() != 1) return std::unique_ptr<CpuOp>();
  const ir::Tensor* s = scalar_constant(node.input(1));
  const ir::Tensor* z = scalar_constant(node.input(2));
  if (!node.input(0) || !s || s->dtype() != ir::DType::kF32 || !z) return std::unique_ptr<CpuOp>();
  const float scale = s->data<float>()[0];
  if (!(scale > 0.0f) || scale == std::numeric_limits<float>::infinity()) return std::unique_ptr<CpuOp>();
  const ir::DType q = z->dtype();
  // The output dtype follows from the zero point's (the schema's rule); the input's must match.
  const ir::DType in = node.input(0)->type.dtype;
  if (quantize ? in != ir::DType::kF32 : in != q) return std::unique_ptr<CpuOp>();
  const auto zp = static_cast<int32_t>(z->get_int(0));
  return quantize ? make_typed<QuantizeOp>(q, scale, zp) : make_typed<DequantizeOp>(q, scale, zp);
}

}  // namespace nfuse::backends::cpu
