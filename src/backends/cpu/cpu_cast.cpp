// Cast between float32 and float16 on the f16-vcvt kernels (F16C where the CPU has it), in
// parallel chunks: the graph-edge Casts of FP16 models. Bit-exact with the reference Cast (NaN
// payloads aside, f16_vcvt.h). Every other pair of dtypes converts with the reference Cast's own
// element loop (ref_cast.h: the same rules, so the same results) in parallel parts.
#include <algorithm>

#include "backends/cpu/cpu_op.h"
#include "backends/ref/ref_cast.h"
#include "kernels/f16-vcvt/f16_vcvt.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kTaskElements = 32768;

class HalfCast final : public CpuOp {
 public:
  explicit HalfCast(bool to_half) : to_half_(to_half), cfg_(kernels::f16_vcvt_config(kernels::selected_isa())) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    const void* x = t.inputs[0]->raw();
    void* y = t.outputs[0]->raw();
    rc.pool.run((n + kTaskElements - 1) / kTaskElements, [&](size_t i, size_t) {
      const size_t b = i * kTaskElements, len = std::min(kTaskElements, n - b);
      if (to_half_) {
        cfg_.to_f16(static_cast<const float*>(x) + b, static_cast<uint16_t*>(y) + b, len);
      } else {
        cfg_.to_f32(static_cast<const uint16_t*>(x) + b, static_cast<float*>(y) + b, len);
      }
    });
    return ok_status();
  }

 private:
  bool to_half_;
  const kernels::F16VcvtConfig& cfg_;
};

class ElementCast final : public CpuOp {
 public:
  ElementCast(ir::DType from, ir::DType to) : from_(from), to_(to) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    if (t.inputs[0]->dtype() != from_ || t.outputs[0]->dtype() != to_ || t.outputs[0]->numel() != t.inputs[0]->numel())
      return invalid_argument("Cast: tensors do not match the planned dtypes");
    const void* x = t.inputs[0]->raw();
    void* y = t.outputs[0]->raw();
    rc.pool.run((n + kTaskElements - 1) / kTaskElements, [&](size_t i, size_t) {
      ref::cast_elements(from_, to_, x, y, i * kTaskElements, std::min(n, (i + 1) * kTaskElements));
    });
    return ok_status();
  }

 private:
  ir::DType from_, to_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_cast(const ir::Node& node, const CompileContext&) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (ops::has_fused_epilogue(node) || !x || !y) return std::unique_ptr<CpuOp>();
  const ir::DType from = x->type.dtype;
  // The attribute decides; the output value's type may not be inferred yet in a hand-built graph.
  const ir::DType to = node.op_type == "Cast"
                           ? ops::dtype_from_onnx(node.attrs.get_int("to", 0)).value_or(y->type.dtype)
                           : y->type.dtype;
  if (from == ir::DType::kF32 && to == ir::DType::kF16) return std::unique_ptr<CpuOp>(std::make_unique<HalfCast>(true));
  if (from == ir::DType::kF16 && to == ir::DType::kF32)
    return std::unique_ptr<CpuOp>(std::make_unique<HalfCast>(false));
  if (!ref::cast_elements(from, to, nullptr, nullptr, 0, 0)) return std::unique_ptr<CpuOp>();  // ref reports it
  return std::unique_ptr<CpuOp>(std::make_unique<ElementCast>(from, to));
}

}  // namespace nfuse::backends::cpu
