// QLinearConcat (com.microsoft) on the cpu backend: each input's rows are copied where its
// quantization equals the output's (quantize(dequantize(x)) is then x) and otherwise mapped
// through a 256-entry table of quantize(dequantize(x)) built at compile time (x8-lut kernels).
// 16-bit (W8A16 graphs) requantizes in L1-sized chunks instead, dequantized to f32 and quantized
// back by the q-dequant and f32-qvcvt kernels (65536-entry tables would be 128 KiB per input).
// Bit-exact with ref_qlinear_concat.cpp: the tables hold the very values ref computes, and the
// kernels are bit-exact with its scalar arithmetic.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_qlinear_ops.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/q-dequant/q_dequant.h"
#include "kernels/quant_arithmetic.h"
#include "kernels/x8-lut/x8_lut.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::cpu {
namespace {

// Over the pool by outer index o: for every input i, row(worker, i, src, dst, n) with the n
// elements of input i at element src of it that go to the output at element dst.
template <typename RowFn>
Status for_each_row(const OpTensors& t, int64_t axis_attr, size_t inputs, RunContext& rc, const RowFn& row) {
  const std::vector<int64_t>& od = t.outputs[0]->dims();
  auto axis = ops::normalize_axis(axis_attr, static_cast<int>(od.size()));
  if (!axis) return internal_error("QLinearConcat: axis out of range at run time");
  size_t outer = 1, inner = 1;
  for (int d = 0; d < *axis; ++d) outer *= static_cast<size_t>(od[static_cast<size_t>(d)]);
  for (size_t d = static_cast<size_t>(*axis) + 1; d < od.size(); ++d) inner *= static_cast<size_t>(od[d]);
  const size_t out_row = static_cast<size_t>(od[static_cast<size_t>(*axis)]) * inner;
  rc.pool.run(outer, [&](size_t o, size_t worker) {
    size_t offset = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const size_t n = static_cast<size_t>(t.inputs[2 + 3 * i]->dims()[static_cast<size_t>(*axis)]) * inner;
      if (n != 0) row(worker, i, o * n, o * out_row + offset, n);
      offset += n;
    }
  });
  return ok_status();
}

class QLinearConcatOp final : public CpuOp {
 public:
  QLinearConcatOp(int64_t axis, std::vector<QConcatInput> inputs) : axis_(axis), inputs_(std::move(inputs)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    auto* y = static_cast<uint8_t*>(t.outputs[0]->raw());
    const kernels::X8LutFn lut = kernels::x8_lut_kernel(kernels::selected_isa());
    return for_each_row(t, axis_, inputs_.size(), rc, [&](size_t, size_t i, size_t at, size_t to, size_t n) {
      const auto* src = static_cast<const uint8_t*>(t.inputs[2 + 3 * i]->raw()) + at;
      if (inputs_[i].copy)
        std::memcpy(y + to, src, n);
      else
        lut(src, y + to, n, inputs_[i].table);
    });
  }

 private:
  int64_t axis_;
  std::vector<QConcatInput> inputs_;
};

// The 16-bit form: rows copied where an input's parameters are Y's, else dequantized and
// quantized again chunk by chunk.
class QLinearConcat16Op final : public CpuOp {
 public:
  struct Input {
    float scale = 1.0f;
    int32_t zp = 0;
    bool copy = true;
  };
  QLinearConcat16Op(int64_t axis, ir::DType t, float y_scale, int32_t y_zp, std::vector<Input> inputs)
      : axis_(axis), signed_(t == ir::DType::kI16), inputs_(std::move(inputs)) {
    q_ = kernels::f32_quantize_params(y_scale, y_zp, signed_, 16);
  }

  size_t scratch_floats(const OpTensors&, size_t) const override { return kChunk; }

  Status run(const OpTensors& t, RunContext& rc) override {
    if (rc.scratch.floats() < kChunk) return internal_error("QLinearConcat: scratch too small");
    auto* y = static_cast<uint16_t*>(t.outputs[0]->raw());
    const kernels::Isa isa = kernels::selected_isa();
    const kernels::QDequantizeKernels dq = kernels::q_dequantize_select(isa);
    const kernels::F32Quantize16Fn q16 = kernels::f32_quantize_q16_select(isa);
    // Signed codes run as unsigned with the sign bit flipped and the zero point moved alike.
    const uint16_t flip = signed_ ? 0x8000 : 0;
    const int32_t zp_shift = signed_ ? 32768 : 0;
    return for_each_row(t, axis_, inputs_.size(), rc, [&](size_t worker, size_t i, size_t at, size_t to, size_t n) {
      const auto* src = static_cast<const uint16_t*>(t.inputs[2 + 3 * i]->raw()) + at;
      if (inputs_[i].copy) {
        std::memcpy(y + to, src, n * sizeof(uint16_t));
        return;
      }
      float* f = rc.scratch.get(worker);
      for (size_t c = 0; c < n; c += kChunk) {
        const size_t len = std::min(kChunk, n - c);
        dq.q16(src + c, len, flip, inputs_[i].zp + zp_shift, inputs_[i].scale, f);
        q16(f, len, q_, y + to + c);
      }
    });
  }

 private:
  static constexpr size_t kChunk = 2048;  // floats of one worker's requantization buffer
  int64_t axis_;
  bool signed_;
  std::vector<Input> inputs_;
  kernels::F32QuantizeParams q_;
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

// The 16-bit QLinearConcat op, or nullptr where parameters are not constant or types differ.
std::unique_ptr<CpuOp> make_qlinear_concat16(const ir::Node& node, ir::DType t) {
  float ys;
  int64_t yz;
  if (node.inputs.size() < 5 || (node.inputs.size() - 2) % 3 != 0 ||
      !const_params(node.input(0), node.input(1), t, &ys, &yz))
    return nullptr;
  std::vector<QLinearConcat16Op::Input> inputs((node.inputs.size() - 2) / 3);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int k = static_cast<int>(2 + 3 * i);
    float xs;
    int64_t xz;
    if (!node.input(k) || node.input(k)->type.dtype != t ||
        !const_params(node.input(k + 1), node.input(k + 2), t, &xs, &xz))
      return nullptr;
    inputs[i] = {xs, static_cast<int32_t>(xz), xs == ys && xz == yz};
  }
  return std::make_unique<QLinearConcat16Op>(node.attrs.get_int("axis", 1), t, ys, static_cast<int32_t>(yz),
                                             std::move(inputs));
}

Result<std::unique_ptr<CpuOp>> make_qlinear_concat(const ir::Node& node, const CompileContext&) {
  const ir::Value* yz_value = node.input(1);
  const ir::DType yt = yz_value && yz_value->constant ? yz_value->constant->dtype() : ir::DType::kF32;
  if (yt == ir::DType::kU16 || yt == ir::DType::kI16) return make_qlinear_concat16(node, yt);
  ir::DType t;
  std::vector<QConcatInput> inputs;
  if (!qlinear_concat_inputs(node, &t, &inputs).empty()) return std::unique_ptr<CpuOp>();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (node.input(static_cast<int>(2 + 3 * i))->type.dtype != t) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<QLinearConcatOp>(node.attrs.get_int("axis", 1), std::move(inputs)));
}

}  // namespace nfuse::backends::cpu
