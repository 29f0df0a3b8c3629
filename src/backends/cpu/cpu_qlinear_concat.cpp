// QLinearConcat (com.microsoft) on the cpu backend: each input's rows are copied where its
// quantization equals the output's (quantize(dequantize(x)) is then x) and otherwise mapped
// through a 256-entry table of quantize(dequantize(x)) built at compile time (x8-lut kernels).
// Bit-exact with ref_qlinear_concat.cpp: the table holds the very values ref computes.
#include <cstring>

#include "backends/cpu/cpu_qlinear_ops.h"
#include "kernels/quant_arithmetic.h"
#include "kernels/x8-lut/x8_lut.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::cpu {
namespace {

class QLinearConcatOp final : public CpuOp {
 public:
  QLinearConcatOp(int64_t axis, std::vector<QConcatInput> inputs) : axis_(axis), inputs_(std::move(inputs)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    ir::Tensor& ty = *t.outputs[0];
    const std::vector<int64_t>& od = ty.dims();
    auto axis = ops::normalize_axis(axis_, static_cast<int>(od.size()));
    if (!axis) return internal_error("QLinearConcat: axis out of range at run time");
    size_t outer = 1, inner = 1;
    for (int d = 0; d < *axis; ++d) outer *= static_cast<size_t>(od[static_cast<size_t>(d)]);
    for (size_t d = static_cast<size_t>(*axis) + 1; d < od.size(); ++d) inner *= static_cast<size_t>(od[d]);
    const size_t out_row = static_cast<size_t>(od[static_cast<size_t>(*axis)]) * inner;
    auto* y = static_cast<uint8_t*>(ty.raw());
    const kernels::X8LutFn lut = kernels::x8_lut_kernel(kernels::selected_isa());
    rc.pool.run(outer, [&](size_t o, size_t) {
      size_t offset = 0;
      for (size_t i = 0; i < inputs_.size(); ++i) {
        const ir::Tensor& x = *t.inputs[2 + 3 * i];
        const size_t row = static_cast<size_t>(x.dims()[static_cast<size_t>(*axis)]) * inner;
        const auto* src = static_cast<const uint8_t*>(x.raw()) + o * row;
        uint8_t* dst = y + o * out_row + offset;
        if (row == 0) continue;
        if (inputs_[i].copy) std::memcpy(dst, src, row);
        else lut(src, dst, row, inputs_[i].table);
        offset += row;
      }
    });
    return ok_status();
  }

 private:
  int64_t axis_;
  std::vector<QConcatInput> inputs_;
};

// Constant one-element f32 scale and zero point of dtype t, or false.
bool const_params(const ir::Value* s, const ir::Value* z, ir::DType t, float* scale, int64_t* zp) {
  if (!s || !s->constant || s->constant->dtype() != ir::DType::kF32 || s->constant->numel() != 1) return false;
  if (!z || !z->constant || z->constant->dtype() != t || z->constant->numel() != 1) return false;
  *scale = s->constant->data<float>()[0];
  *zp = z->constant->get_int(0);
  return true;
}

template <typename T>
void fill_table(QConcatInput* in, float xs, int64_t xz, float ys, int64_t yz) {
  for (int v = 0; v < 256; ++v) {
    const T q = static_cast<T>(static_cast<uint8_t>(v));
    const T r = nfuse::quantize_value<T>(nfuse::dequantize_value(q, xs, xz), ys, yz);
    in->table[v] = static_cast<uint8_t>(r);
  }
}

}  // namespace

std::string qlinear_concat_inputs(const ir::Node& node, ir::DType* y_type, std::vector<QConcatInput>* inputs) {
  const ir::Value* yz_value = node.input(1);
  const ir::DType t = yz_value && yz_value->constant ? yz_value->constant->dtype() : ir::DType::kF32;
  if ((t != ir::DType::kU8 && t != ir::DType::kI8) || node.inputs.size() < 5 || (node.inputs.size() - 2) % 3 != 0)
    return "QLinearConcat without a constant 8-bit Y zero point and (X, scale, zero point) triples";
  float ys;
  int64_t yz;
  if (!const_params(node.input(0), node.input(1), t, &ys, &yz)) return "QLinearConcat with a non-constant Y scale";
  inputs->assign((node.inputs.size() - 2) / 3, QConcatInput{});
  for (size_t i = 0; i < inputs->size(); ++i) {
    const int k = static_cast<int>(2 + 3 * i);
    float xs;
    int64_t xz;
    if (!node.input(k) || !const_params(node.input(k + 1), node.input(k + 2), t, &xs, &xz))
      return "QLinearConcat input " + std::to_string(i) + " without constant parameters of Y's type";
    QConcatInput& in = (*inputs)[i];
    in.copy = xs == ys && xz == yz;
    if (t == ir::DType::kU8) fill_table<uint8_t>(&in, xs, xz, ys, yz);
    else fill_table<int8_t>(&in, xs, xz, ys, yz);
  }
  *y_type = t;
  return "";
}

Result<std::unique_ptr<CpuOp>> make_qlinear_concat(const ir::Node& node, const CompileContext&) {
  ir::DType t;
  std::vector<QConcatInput> inputs;
  if (!qlinear_concat_inputs(node, &t, &inputs).empty()) return std::unique_ptr<CpuOp>();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (node.input(static_cast<int>(2 + 3 * i))->type.dtype != t) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<QLinearConcatOp>(node.attrs.get_int("axis", 1), std::move(inputs)));
}

}  // namespace nfuse::backends::cpu
