// Exp, Log, Sqrt, Erf and nfuse.Gelu (both forms) on f32, on the vector kernels of
// src/kernels/f32-vmath for the ISA the CPU selects, in parallel chunks. Other dtypes, and a node
// carrying a fused epilogue, stay on the reference kernel.
#include <algorithm>

#include "backends/cpu/cpu_op.h"
#include "kernels/f32-vmath/f32_vmath.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kTaskFloats = 16384;

class MathOp final : public CpuOp {
 public:
  explicit MathOp(kernels::F32VmathFn fn) : fn_(fn) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    rc.pool.run((n + kTaskFloats - 1) / kTaskFloats, [&](size_t i, size_t) {
      const size_t b = i * kTaskFloats;
      fn_(x + b, y + b, std::min(kTaskFloats, n - b));
    });
    return ok_status();
  }

 private:
  kernels::F32VmathFn fn_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_math(const ir::Node& node, const CompileContext&) {
  if (ops::has_fused_epilogue(node) || node.num_inputs() != 1 || !is_f32(node.input(0)) || !is_f32(node.output(0)))
    return std::unique_ptr<CpuOp>();
  const kernels::F32VmathConfig& c = kernels::f32_vmath_config(kernels::selected_isa());
  kernels::F32VmathFn fn = nullptr;
  if (node.op_type == "Exp") fn = c.exp;
  if (node.op_type == "Log") fn = c.log;
  if (node.op_type == "Sqrt") fn = c.sqrt;
  if (node.op_type == "Erf") fn = c.erf;
  if (node.op_type == "Gelu") {
    const std::string form = node.attrs.get_string("approximate", "none");
    fn = form == "tanh" ? c.gelu_tanh : form == "none" ? c.gelu : nullptr;
  }
  if (!fn) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<MathOp>(fn));
}

}  // namespace nfuse::backends::cpu
