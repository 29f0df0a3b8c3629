// Pow on f32 with a constant scalar exponent of 2 (x * x) or 0.5 (sqrt), the two that detection
// heads and normalisations use; any other Pow runs on the reference kernel. Both agree bit for
// bit with the reference's double pow rounded to float: the square is exact in double, and a
// double sqrt rounded to float is the correctly rounded float sqrt. pow(-0, 0.5) is +0 and
// pow(-inf, 0.5) is +inf, unlike sqrt, so those two are patched.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_op.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kMinTaskFloats = 16384;

class PowOp final : public CpuOp {
 public:
  PowOp(bool square, std::unique_ptr<CpuOp> fallback) : square_(square), fallback_(std::move(fallback)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& z = *t.outputs[0];
    if (z.numel() != x.numel()) return fallback_->run(t, rc);  // a higher-rank exponent broadcasts x
    const size_t n = static_cast<size_t>(x.numel());
    const float* xs = x.data<float>();
    float* out = z.data<float>();
    const size_t tasks = (n + kMinTaskFloats - 1) / kMinTaskFloats;
    auto task = [&](size_t i, size_t) {
      const size_t b0 = i * kMinTaskFloats, b1 = std::min(n, b0 + kMinTaskFloats);
      if (square_) {
        for (size_t j = b0; j < b1; ++j) out[j] = xs[j] * xs[j];
        return;
      }
      constexpr float kInf = std::numeric_limits<float>::infinity();
      for (size_t j = b0; j < b1; ++j) out[j] = xs[j] == -kInf ? kInf : std::sqrt(xs[j]) + 0.0f;
    };
    rc.pool.run(tasks, task);
    return ok_status();
  }

 private:
  bool square_;
  std::unique_ptr<CpuOp> fallback_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_pow(const ir::Node& node, const CompileContext&) {
  if (ops::has_fused_epilogue(node)) return std::unique_ptr<CpuOp>();
  if (node.inputs.size() != 2 || !is_f32(node.input(0)) || !node.input(1) || !node.input(1)->constant)
    return std::unique_ptr<CpuOp>();
  const ir::Tensor& e = *node.input(1)->constant;
  if (e.numel() != 1 || e.dtype() == ir::DType::kBool) return std::unique_ptr<CpuOp>();
  const double v = e.get_double(0);
  if (v != 2.0 && v != 0.5) return std::unique_ptr<CpuOp>();
  std::unique_ptr<CpuOp> fallback = make_ref_op(node);
  if (!fallback) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<PowOp>(v == 2.0, std::move(fallback)));
}

}  // namespace nfuse::backends::cpu
