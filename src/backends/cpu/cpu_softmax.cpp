// Softmax over the last axis on f32 (the attention and classifier case): one pass for the max,
// one for exp and the sum, one to scale; rows split across the pool.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_op.h"

namespace nfuse::backends::cpu {
namespace {

class SoftmaxOp final : public CpuOp {
 public:
  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& xt = *t.inputs[0];
    const size_t n = xt.rank() == 0 ? 1 : static_cast<size_t>(xt.dim(xt.rank() - 1));
    const size_t rows = n == 0 ? 0 : static_cast<size_t>(xt.numel()) / n;
    const float* x = xt.data<float>();
    float* y = t.outputs[0]->data<float>();
    const size_t per_task = std::max<size_t>(1, 8192 / std::max<size_t>(n, 1));
    auto task = [&](size_t i, size_t) {
      const size_t r0 = i * per_task, r1 = std::min(rows, r0 + per_task);
      for (size_t r = r0; r < r1; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float mx = -std::numeric_limits<float>::infinity();
        for (size_t j = 0; j < n; ++j) mx = std::max(mx, xr[j]);
        double sum = 0;
        for (size_t j = 0; j < n; ++j) {
          yr[j] = std::exp(xr[j] - mx);
          sum += yr[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (size_t j = 0; j < n; ++j) yr[j] *= inv;
      }
    };
    rc.pool.run((rows + per_task - 1) / per_task, task);
    return ok_status();
  }
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_softmax(const ir::Node& node, const CompileContext&) {
  const ir::Value* x = node.input(0);
  if (!is_f32(x) || !x->type.shape.rank_known() || x->type.shape.rank() < 1) return std::unique_ptr<CpuOp>();
  const int64_t rank = x->type.shape.rank();
  // Opset < 13 flattens from `axis` (default 1); that equals the last axis only when axis is it.
  int64_t axis = node.attrs.get_int("axis", node.opset > 0 && node.opset < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<SoftmaxOp>());
}

}  // namespace nfuse::backends::cpu
