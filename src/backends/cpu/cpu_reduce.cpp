// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceSumSquare and ReduceL2 on f32, over any axes
// that merge into one contiguous run: the input is viewed as [outer, r, inner] (adjacent reduced
// axes merge, so do adjacent kept ones). inner == 1 (the last axes: pooling-like means, norms)
// reduces contiguous rows with independent lane accumulators (cpu_reduce.h); inner > 1 (the
// channel axis of NCHW, a spatial mean with channels last) accumulates whole inner rows, which
// vectorises along inner. Sums accumulate in float, where the reference accumulates in double:
// the results differ by rounding only. Max and Min keep NaN, as the reference does. Reduced axes
// that do not merge into one run, and an empty reduction, run on the reference kernel.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_reduce.h"
#include "ops/elementwise_util.h"

namespace nfuse::backends::cpu {
namespace {

enum class Kind { kSum, kMean, kMax, kMin, kSumSquare, kL2 };

template <Kind K>
inline float step(float acc, float v) {
  if constexpr (K == Kind::kMax) return (v != v || v > acc) ? v : acc;  // NaN sticks: v > NaN is false
  if constexpr (K == Kind::kMin) return (v != v || v < acc) ? v : acc;
  if constexpr (K == Kind::kSumSquare || K == Kind::kL2) return acc + v * v;
  return acc + v;
}

// Two partial results of step<K> merged.
template <Kind K>
inline float combine(float a, float b) {
  if constexpr (K == Kind::kMax || K == Kind::kMin) return step<K>(a, b);
  return a + b;
}

template <Kind K>
constexpr float identity() {
  if constexpr (K == Kind::kMax) return -std::numeric_limits<float>::infinity();
  if constexpr (K == Kind::kMin) return std::numeric_limits<float>::infinity();
  return 0.0f;
}

template <Kind K>
inline float finish(float acc, size_t count) {
  if constexpr (K == Kind::kMean) return acc / static_cast<float>(count);
  if constexpr (K == Kind::kL2) return std::sqrt(acc);
  return acc;
}

// One contiguous row of n values, with kReduceLanes independent accumulators.
template <Kind K>
float reduce_row(const float* x, size_t n) {
  float acc[kReduceLanes];
  for (float& a : acc) a = identity<K>();
  size_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes)
    for (size_t j = 0; j < kReduceLanes; ++j) acc[j] = step<K>(acc[j], x[i + j]);
  float r = identity<K>();
  for (; i < n; ++i) r = step<K>(r, x[i]);
  for (size_t j = 0; j < kReduceLanes; ++j) r = combine<K>(r, acc[j]);
  return r;
}

struct ReduceView {
  size_t outer = 1, r = 1, inner = 1;
};

template <Kind K>
class ReduceOp final : public CpuOp {
 public:
  ReduceOp(const ir::Node& node, std::unique_ptr<CpuOp> fallback)
      : node_(node), fallback_(std::move(fallback)), axes_fixed_(!node.input(1) || node.input(1)->constant) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    if (!axes_fixed_ || x.dims() != view_dims_ || !view_valid_) NFUSE_RETURN_IF_ERROR_PLAIN(resolve_view(t));
    if (!fast_) return fallback_->run(t, rc);
    const ReduceView& v = view_;
    const float* xs = x.data<float>();
    float* y = t.outputs[0]->data<float>();
    if (v.inner == 1) {
      const size_t rows_per_task = std::max<size_t>(1, kTaskFloats / std::max<size_t>(v.r, 1));
      rc.pool.run((v.outer + rows_per_task - 1) / rows_per_task, [&](size_t task, size_t) {
        const size_t o1 = std::min(v.outer, (task + 1) * rows_per_task);
        for (size_t o = task * rows_per_task; o < o1; ++o) y[o] = finish<K>(reduce_row<K>(xs + o * v.r, v.r), v.r);
      });
      return ok_status();
    }
    // [outer, r, inner]: per outer index, accumulate the r rows of `inner` values into y's row,
    // in column blocks so several tasks share one outer index.
    const size_t block = std::min(v.inner, std::max<size_t>(64, kTaskFloats / std::max<size_t>(v.r, 1)));
    const size_t blocks = (v.inner + block - 1) / block;
    rc.pool.run(v.outer * blocks, [&](size_t task, size_t) {
      const size_t o = task / blocks, c0 = task % blocks * block, c1 = std::min(v.inner, c0 + block);
      float* yo = y + o * v.inner;
      const float* xo = xs + o * v.r * v.inner;
      for (size_t c = c0; c < c1; ++c) yo[c] = identity<K>();
      for (size_t k = 0; k < v.r; ++k) {
        const float* row = xo + k * v.inner;
        for (size_t c = c0; c < c1; ++c) yo[c] = step<K>(yo[c], row[c]);
      }
      for (size_t c = c0; c < c1; ++c) yo[c] = finish<K>(yo[c], v.r);
    });
    return ok_status();
  }

 private:
  static constexpr size_t kTaskFloats = 32768;

  // The [outer, r, inner] view of this input (fast_ false: the reference kernel runs it),
  // resolved once per input dims when the axes are an attribute or a constant input.
  Status resolve_view(const OpTensors& t) {
    const ir::Tensor& x = *t.inputs[0];
    const ir::Tensor* axes_value = t.inputs.size() > 1 ? t.inputs[1] : nullptr;
    NFUSE_ASSIGN_OR_RETURN(ops::ReduceAxes axes, ops::resolve_reduce_axes(node_, axes_value, x.rank()));
    view_ = ReduceView{};
    fast_ = !axes.noop && view_of(x.dims(), axes.reduced, &view_) && view_.r != 0;
    view_dims_ = x.dims();
    view_valid_ = true;
    return ok_status();
  }

  // False unless the reduced axes (after dropping size-1 axes) form one contiguous run.
  static bool view_of(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, ReduceView* v) {
    int state = 0;  // 0: before the run, 1: in it, 2: after it
    for (size_t d = 0; d < dims.size(); ++d) {
      const size_t n = static_cast<size_t>(dims[d]);
      if (n == 1) continue;
      if (reduced[d]) {
        if (state == 2) return false;
        state = 1;
        v->r *= n;
      } else if (state == 0) {
        v->outer *= n;
      } else {
        state = 2;
        v->inner *= n;
      }
    }
    return true;
  }

  const ir::Node& node_;
  std::unique_ptr<CpuOp> fallback_;
  const bool axes_fixed_;  // no axes input, or a constant one: the view depends on the dims only
  bool view_valid_ = false, fast_ = false;
  std::vector<int64_t> view_dims_;
  ReduceView view_;
};

template <Kind K>
std::unique_ptr<CpuOp> make(const ir::Node& node, std::unique_ptr<CpuOp> fallback) {
  return std::make_unique<ReduceOp<K>>(node, std::move(fallback));
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_reduce(const ir::Node& node, const CompileContext&) {
  if (ops::has_fused_epilogue(node) || !is_f32(node.input(0)) || !is_f32(node.output(0)))
    return std::unique_ptr<CpuOp>();
  std::unique_ptr<CpuOp> fallback = make_ref_op(node);
  if (!fallback) return std::unique_ptr<CpuOp>();
  const std::string& op = node.op_type;
  if (op == "ReduceSum") return make<Kind::kSum>(node, std::move(fallback));
  if (op == "ReduceMean") return make<Kind::kMean>(node, std::move(fallback));
  if (op == "ReduceMax") return make<Kind::kMax>(node, std::move(fallback));
  if (op == "ReduceMin") return make<Kind::kMin>(node, std::move(fallback));
  if (op == "ReduceSumSquare") return make<Kind::kSumSquare>(node, std::move(fallback));
  if (op == "ReduceL2") return make<Kind::kL2>(node, std::move(fallback));
  return std::unique_ptr<CpuOp>();
}

}  // namespace nfuse::backends::cpu
