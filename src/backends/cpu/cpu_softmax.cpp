// Softmax over the last axis on f32 (the attention and classifier case): one pass for the max,
// one for exp, one for the sum, one to scale; rows split across the pool. Every loop is written
// so GCC -O3 vectorises it without -ffast-math: exp is inlined (no libm call), and the max and
// the sum keep kLanes independent partial results (float reductions may not be reordered).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_reduce.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kLanes = kReduceLanes;

// exp(x) for x <= 0 (x - max of the row), a few ulp: Cephes expf's range reduction (x = n*ln2 +
// r, |r| <= ln2/2, ln2 split in two so n*ln2 is exact) and its degree-6 polynomial, scaled by 2^n
// built in the exponent bits. x is clamped at -87 so 2^n stays normal: exp(-87) = 1.6e-38
// stands in for smaller values, which changes no sum of at least exp(0) = 1 in float.
inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;  // NaN stays NaN (and the result with it)
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float shifted = x * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;
  // n as an integer from the mantissa bits (no float->int conversion: a NaN must not be UB).
  const uint32_t ni = std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kRound);
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((ni + 127u) << 23);
  return e * scale;
}

float row_max(const float* x, size_t n) {
  float acc[kLanes];
  for (size_t j = 0; j < kLanes; ++j) acc[j] = -std::numeric_limits<float>::infinity();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) acc[j] = acc[j] < x[i + j] ? x[i + j] : acc[j];
  float m = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) m = std::max(m, x[i]);
  for (size_t j = 0; j < kLanes; ++j) m = std::max(m, acc[j]);
  return m;
}

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
        const float mx = row_max(xr, n);
        for (size_t j = 0; j < n; ++j) yr[j] = exp_nonpositive(xr[j] - mx);
        const float inv = 1.0f / lane_sum(yr, n);
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
