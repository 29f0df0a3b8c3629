// Add, Sub, Mul, Div, and two-input Max and Min, on f32 with the broadcasts that occur in CNNs as fast paths: same
// shape, one operand a scalar, and one operand varying along a contiguous run of axes only (per-channel [1,C,1,1]
// scales and biases, [N] row biases). Any other numpy broadcast (both operands broadcast, as [N,1,W] + [1,H,1])
// runs row by row (cpu_broadcast.h) on the same vector kernels; only opset-1..6 `axis` broadcasts run on the
// reference kernel. Sum, Mean, Max and Min over any number of inputs fold left on the same kernels, one
// pass per input, accumulating in f32 as ONNX Runtime does (ref accumulates in double: the two
// differ in the last bits of a Sum or Mean, never of a Max or Min).
#include <algorithm>
#include <cstring>
#include <string_view>

#include "backends/cpu/cpu_broadcast.h"
#include "backends/cpu/cpu_op.h"
#include "kernels/f32-vbinary/f32_vbinary.h"
#include "ops/elementwise_util.h"

namespace nfuse::backends::cpu {

namespace {

using kernels::F32BinaryOp;

// y[i] = a[i] op b[i*b_step] (b_step 0: b is one value), or with the operands swapped.
void run_span(const kernels::F32VbinaryConfig& k, F32BinaryOp op, const float* a, const float* b, size_t b_step,
              float* y, size_t n, bool swapped) {
  const size_t i = static_cast<size_t>(op);
  if (b_step == 0) {
    (swapped ? k.ropc[i] : k.opc[i])(a, b[0], y, n);
  } else if (swapped) {
    k.op[i](b, a, y, n);
  } else {
    k.op[i](a, b, y, n);
  }
}

// The full operand is viewed as [outer, mid, inner]; the small one has `mid` values, one per
// mid index (mid == 1: a scalar; inner == 1 and outer == 1: same shape).
struct Broadcast {
  size_t outer = 1, mid = 1, inner = 1;
  bool swapped = false;  // the small operand is the first input
};

// Finds the [outer, mid, inner] view of `small` against `full` (== the output dims).
bool broadcast_view(const std::vector<int64_t>& full, const std::vector<int64_t>& small, Broadcast* b) {
  if (small.size() > full.size()) return false;
  const size_t r = full.size(), off = r - small.size();
  int first = -1, last = -1;
  for (size_t i = 0; i < r; ++i) {
    const int64_t s = i < off ? 1 : small[i - off];
    if (s == 1 && full[i] != 1) continue;
    if (s != full[i]) return false;
    if (s == 1) continue;
    if (first < 0) first = static_cast<int>(i);
    if (last >= 0 && last != static_cast<int>(i) - 1) return false;  // not one contiguous run
    last = static_cast<int>(i);
  }
  b->outer = b->mid = b->inner = 1;
  for (size_t i = 0; i < r; ++i) {
    const size_t d = static_cast<size_t>(full[i]);
    if (first < 0 || static_cast<int>(i) < first) {
      b->outer *= d;
    } else if (static_cast<int>(i) <= last) {
      b->mid *= d;
    } else {
      b->inner *= d;
    }
  }
  if (first < 0) {  // scalar-like: everything is outer
    b->inner = b->outer;
    b->outer = 1;
  }
  return true;
}

class BinaryOp final : public CpuOp {
 public:
  BinaryOp(F32BinaryOp op, std::unique_ptr<CpuOp> fallback, bool legacy_broadcast)
      : op_(op),
        kernels_(kernels::f32_vbinary_config(kernels::selected_isa())),
        fallback_(std::move(fallback)),
        legacy_broadcast_(legacy_broadcast) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    if (legacy_broadcast_) return fallback_->run(t, rc);  // B aligned at `axis`, not numpy's rule
    const ir::Tensor& a = *t.inputs[0];
    const ir::Tensor& b = *t.inputs[1];
    ir::Tensor& y = *t.outputs[0];
    Broadcast v;
    const bool a_full = a.dims() == y.dims(), b_full = b.dims() == y.dims();
    if (!(a_full && broadcast_view(y.dims(), b.dims(), &v))) {
      if (!(b_full && broadcast_view(y.dims(), a.dims(), &v))) return run_general(a, b, y, rc);
      v.swapped = true;
    }
    const float* full = (v.swapped ? b : a).data<float>();
    const float* small = (v.swapped ? a : b).data<float>();
    float* out = y.data<float>();
    const bool same = a_full && b_full;
    // Tasks: (outer, mid) rows of `inner` values, grouped so each task does >= ~16K elements.
    const size_t rows = same ? 1 : v.outer * v.mid;
    const size_t row_len = same ? static_cast<size_t>(y.numel()) : v.inner;
    const size_t per_task = std::max<size_t>(1, 16384 / std::max<size_t>(row_len, 1));
    if (same) {
      constexpr size_t kChunk = 16384;
      const size_t n = row_len;
      auto task = [&](size_t i, size_t) {
        const size_t s = i * kChunk, e = std::min(n, s + kChunk);
        run_span(kernels_, op_, full + s, small + s, 1, out + s, e - s, v.swapped);
      };
      rc.pool.run((n + kChunk - 1) / kChunk, task);
      return ok_status();
    }
    auto task = [&](size_t i, size_t) {
      const size_t r0 = i * per_task, r1 = std::min(rows, r0 + per_task);
      for (size_t r = r0; r < r1; ++r) {
        const size_t off = r * row_len;
        run_span(kernels_, op_, full + off, small + r % v.mid, 0, out + off, row_len, v.swapped);
      }
    };
    rc.pool.run((rows + per_task - 1) / per_task, task);
    return ok_status();
  }

  // Any numpy broadcast, one output row at a time (file comment).
  Status run_general(const ir::Tensor& a, const ir::Tensor& b, ir::Tensor& y, RunContext& rc) {
    const std::array<const std::vector<int64_t>*, 3> dims{&a.dims(), &b.dims(), &y.dims()};
    if (!general_key_.same(dims)) {
      if (!general_.plan(y.dims(), {&a.dims(), &b.dims()})) return invalid_argument("inputs do not broadcast");
      general_key_.set(dims);
    }
    const float* av = a.data<float>();
    const float* bv = b.data<float>();
    float* out = y.data<float>();
    const size_t sa = general_.step(0), sb = general_.step(1), n = general_.row_length();
    general_.run(rc.pool, [&](size_t o, const std::array<size_t, 2>& off) {
      const float* x = av + off[0];
      const float* z = bv + off[1];
      if (sa == 1) {
        run_span(kernels_, op_, x, z, sb, out + o, n, false);
      } else if (sb == 1) {
        run_span(kernels_, op_, z, x, 0, out + o, n, true);
      } else {  // both operands constant along the row
        run_span(kernels_, op_, x, z, 0, out + o, 1, false);
        std::fill(out + o + 1, out + o + n, out[o]);
      }
    });
    return ok_status();
  }

  F32BinaryOp op_;
  const kernels::F32VbinaryConfig& kernels_;
  std::unique_ptr<CpuOp> fallback_;  // the reference kernel, for opset-1..6 `axis` broadcasts
  bool legacy_broadcast_;
  BroadcastRows<2> general_;
  DimsKey<3> general_key_;
};

// y = in0 op in1 op ... op in(n-1), left to right; Mean divides the sum by n at the end.
class VariadicOp final : public CpuOp {
 public:
  VariadicOp(F32BinaryOp op, bool mean)
      : step_(op, nullptr, false), kernels_(kernels::f32_vbinary_config(kernels::selected_isa())), mean_(mean) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    ir::Tensor& y = *t.outputs[0];
    const size_t n = t.inputs.size();
    if (n == 1) {  // the output has the input's dims
      std::memcpy(y.data<float>(), t.inputs[0]->data<float>(), static_cast<size_t>(y.numel()) * sizeof(float));
    } else {
      NFUSE_RETURN_IF_ERROR_PLAIN(step_.run({{t.inputs[0], t.inputs[1]}, {}, {&y}}, rc));
      for (size_t k = 2; k < n; ++k) NFUSE_RETURN_IF_ERROR_PLAIN(step_.run({{&y, t.inputs[k]}, {}, {&y}}, rc));
    }
    if (!mean_ || n == 1) return ok_status();
    const float count = static_cast<float>(n);
    constexpr size_t kChunk = 16384;
    const size_t total = static_cast<size_t>(y.numel());
    float* out = y.data<float>();
    rc.pool.run((total + kChunk - 1) / kChunk, [&](size_t i, size_t) {
      const size_t s = i * kChunk, e = std::min(total, s + kChunk);
      kernels_.opc[static_cast<size_t>(F32BinaryOp::kDiv)](out + s, count, out + s, e - s);
    });
    return ok_status();
  }

 private:
  BinaryOp step_;  // in place on y after the first pass: the kernels are element-wise
  const kernels::F32VbinaryConfig& kernels_;
  bool mean_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_variadic(const ir::Node& node, const CompileContext&) {
  static const std::pair<const char*, F32BinaryOp> kOps[] = {
      {"Sum", F32BinaryOp::kAdd}, {"Mean", F32BinaryOp::kAdd}, {"Max", F32BinaryOp::kMax}, {"Min", F32BinaryOp::kMin}};
  auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return node.op_type == o.first; });
  if (it == std::end(kOps) || node.num_inputs() < 1) return std::unique_ptr<CpuOp>();
  for (int i = 0; i < node.num_inputs(); ++i)
    if (!is_f32(node.input(i))) return std::unique_ptr<CpuOp>();
  // Before opset 8 these ops did not broadcast; the shapes are then equal and the numpy rule agrees.
  return std::unique_ptr<CpuOp>(std::make_unique<VariadicOp>(it->second, node.op_type == "Mean"));
}

Result<std::unique_ptr<CpuOp>> make_elementwise(const ir::Node& node, const CompileContext& ctx) {
  static const std::pair<const char*, F32BinaryOp> kOps[] = {{"Add", F32BinaryOp::kAdd}, {"Sub", F32BinaryOp::kSub},
                                                             {"Mul", F32BinaryOp::kMul}, {"Div", F32BinaryOp::kDiv},
                                                             {"Max", F32BinaryOp::kMax}, {"Min", F32BinaryOp::kMin}};
  auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return node.op_type == o.first; });
  if (it == std::end(kOps)) return make_unary(node);
  if ((it->first == std::string_view("Max") || it->first == std::string_view("Min")) && node.num_inputs() != 2) {
    return make_variadic(node, ctx);
  }
  if (node.num_inputs() != 2 || !is_f32(node.input(0)) || !is_f32(node.input(1))) {
    return std::unique_ptr<CpuOp>();
  }
  std::unique_ptr<CpuOp> ref = make_ref_op(node);
  if (!ref) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(
      std::make_unique<BinaryOp>(it->second, std::move(ref), ops::uses_legacy_broadcast(node)));
}

}  // namespace nfuse::backends::cpu
