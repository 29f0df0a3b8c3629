// LayerNormalization on f32 for the cpu backend: the reference kernel converts to double and
// builds per-element parameter offsets on every run, which made it the third most expensive op
// of a transformer encoder. Here each row (the dims from `axis` on) is normalised in float with
// a two-pass mean / variance, in loops GCC -O3 vectorises (the sums keep kLanes independent
// partial sums, since float addition may not be reordered), rows split across the pool.
// Scale and B must cover the whole row (broadcast only through leading 1s) or be a single value;
// other broadcasts, and the optional Mean / InvStdDev outputs, go to the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_reduce.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kLanes = kReduceLanes;
constexpr size_t kTaskFloats = 16384;  // about this many elements per pool task

float squared_deviation_of(const float* x, size_t n, float mean) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - mean;
      acc[j] += d * d;
    }
  float s = 0.0f;
  for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
  for (size_t j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

// y = (x - mean) / sqrt(var + eps) * g (+ b) over one row of n > 0 elements; y may be x.
void normalize_row(const float* x, float* y, size_t n, const float* g, const float* b, float eps) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = lane_sum(x, n) * inv_n;
  const float var = squared_deviation_of(x, n, mean) * inv_n;
  const float inv_std = 1.0f / std::sqrt(var + eps);
  if (b) {
    for (size_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv_std * g[i] + b[i];
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv_std * g[i];
  }
}

// True when a parameter of dims `p` has one value per element of `inner` (its dims equal the
// trailing dims of `inner`, missing leading dims and leading 1s aside).
bool covers_row(const std::vector<int64_t>& p, const std::vector<int64_t>& inner) {
  if (p.size() > inner.size()) return false;
  const size_t off = inner.size() - p.size();
  for (size_t k = 0; k < off; ++k)
    if (inner[k] != 1) return false;
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != inner[off + k]) return false;
  return true;
}

class LayerNormOp final : public CpuOp {
 public:
  LayerNormOp(int64_t axis, float eps, std::unique_ptr<CpuOp> fallback)
      : axis_(axis), eps_(eps), fallback_(std::move(fallback)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& xt = *t.inputs[0];
    const ir::Tensor* scale = t.inputs[1];
    const ir::Tensor* bias = t.inputs.size() > 2 ? t.inputs[2] : nullptr;
    const std::optional<int> axis = ops::normalize_axis(axis_, xt.rank());
    if (!axis) return fallback_->run(t, rc);  // the reference reports the error
    const std::vector<int64_t> inner_dims(xt.dims().begin() + *axis, xt.dims().end());
    int64_t inner64 = 1;
    for (int64_t d : inner_dims) inner64 *= d;
    const size_t inner = static_cast<size_t>(inner64);
    const float* g = param(scale, inner_dims, inner, &scale_buf_);
    const float* b = bias ? param(bias, inner_dims, inner, &bias_buf_) : nullptr;
    if (!g || (bias && !b)) return fallback_->run(t, rc);  // an unusual broadcast
    if (inner == 0) return ok_status();
    const size_t rows = static_cast<size_t>(xt.numel()) / inner;
    const float* x = xt.data<float>();
    float* y = t.outputs[0]->data<float>();
    const size_t per_task = std::max<size_t>(1, kTaskFloats / inner);
    const float eps = eps_;
    auto task = [&](size_t i, size_t) {
      const size_t r0 = i * per_task, r1 = std::min(rows, r0 + per_task);
      for (size_t r = r0; r < r1; ++r) normalize_row(x + r * inner, y + r * inner, inner, g, b, eps);
    };
    rc.pool.run((rows + per_task - 1) / per_task, task);
    return ok_status();
  }

 private:
  // The parameter as one value per row element, or null when it broadcasts some other way.
  static const float* param(const ir::Tensor* p, const std::vector<int64_t>& inner_dims, size_t inner,
                            std::vector<float>* buf) {
    if (p->dtype() != ir::DType::kF32) return nullptr;
    if (covers_row(p->dims(), inner_dims)) return p->data<float>();
    if (p->numel() != 1) return nullptr;
    buf->assign(inner, p->data<float>()[0]);  // a single value: expanded (no allocation once sized)
    return buf->data();
  }

  int64_t axis_;
  float eps_;
  std::vector<float> scale_buf_, bias_buf_;
  std::unique_ptr<CpuOp> fallback_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_layer_norm(const ir::Node& node, const CompileContext&) {
  if (ops::has_fused_epilogue(node) || !is_f32(node.input(0)) || !is_f32(node.input(1))) {
    return std::unique_ptr<CpuOp>();
  }
  if (node.has_input(2) && !is_f32(node.input(2))) return std::unique_ptr<CpuOp>();
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i]) return std::unique_ptr<CpuOp>();  // Mean / InvStdDev wanted: reference
  if (node.attrs.get_int("stash_type", 1) != 1) return std::unique_ptr<CpuOp>();
  std::unique_ptr<CpuOp> fallback = make_ref_op(node);
  if (!fallback) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<LayerNormOp>(node.attrs.get_int("axis", -1),
                                                              node.attrs.get_float("epsilon", 1e-5f),
                                                              std::move(fallback)));
}

}  // namespace nfuse::backends::cpu
