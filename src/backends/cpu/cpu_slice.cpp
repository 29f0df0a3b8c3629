// Slice on the cpu backend as a strided copy: the reference kernel walks every output element
// through a per-element index vector, which made the three q/k/v Slices of each attention layer
// cost as much as a GEMM. With constant starts / ends / axes / steps, the slice of given input
// dims is a view: a base offset plus, per output axis, a count and an input stride (negative for
// negative steps). Axes of one element are dropped and axes that stay contiguous merged, so a
// slice along the last axis is one memcpy per row; rows split across the pool. Run-time
// parameters (non-constant inputs) are left to the reference kernel.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "ops/tensor_params.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kMinTaskBytes = size_t{32} << 10;  // smallest copy worth handing to another thread

template <typename T>
void strided_copy(const char* src, int64_t stride, size_t n, char* dst) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = s[static_cast<int64_t>(i) * stride];
}

class SliceOp final : public CpuOp {
 public:
  SliceOp(std::vector<int64_t> starts, std::vector<int64_t> ends, std::optional<std::vector<int64_t>> axes,
          std::optional<std::vector<int64_t>> steps, std::unique_ptr<CpuOp> fallback)
      : starts_(std::move(starts)), ends_(std::move(ends)), axes_(std::move(axes)), steps_(std::move(steps)),
        fallback_(std::move(fallback)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    if (!valid_ || x.dims() != dims_) NFUSE_RETURN_IF_ERROR_PLAIN(plan(x.dims(), y.dims()));
    if (empty_) return ok_status();
    const size_t esize = ir::dtype_size(x.dtype());
    const size_t inner = static_cast<size_t>(out_dims_.back());
    const int64_t inner_stride = strides_.back();
    const size_t rows = static_cast<size_t>(y.numel()) / inner;
    const size_t row_bytes = inner * esize;
    const size_t per_task = std::max<size_t>(1, kMinTaskBytes / std::max<size_t>(row_bytes, 1));
    const size_t outer_rank = out_dims_.size() - 1;
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(y.raw());
    auto task = [&](size_t i, size_t) {
      const size_t r0 = i * per_task, r1 = std::min(rows, r0 + per_task);
      int64_t idx[kMaxRank] = {};
      int64_t off = base_;
      for (size_t d = outer_rank, rem = r0; d-- > 0;) {  // r0 as an index over the outer axes
        idx[d] = static_cast<int64_t>(rem % static_cast<size_t>(out_dims_[d]));
        rem /= static_cast<size_t>(out_dims_[d]);
        off += idx[d] * strides_[d];
      }
      for (size_t r = r0; r < r1; ++r) {
        const char* s = src + off * static_cast<int64_t>(esize);
        char* o = dst + r * row_bytes;
        if (inner_stride == 1) {
          std::memcpy(o, s, row_bytes);
        } else {
          switch (esize) {
            case 1: strided_copy<uint8_t>(s, inner_stride, inner, o); break;
            case 2: strided_copy<uint16_t>(s, inner_stride, inner, o); break;
            case 4: strided_copy<uint32_t>(s, inner_stride, inner, o); break;
            default: strided_copy<uint64_t>(s, inner_stride, inner, o); break;
          }
        }
        for (size_t d = outer_rank; d-- > 0;) {  // next row: odometer over the outer axes
          off += strides_[d];
          if (++idx[d] < out_dims_[d]) break;
          off -= idx[d] * strides_[d];
          idx[d] = 0;
        }
      }
    };
    if (merged_rank_ok_) {
      rc.pool.run((rows + per_task - 1) / per_task, task);
      return ok_status();
    }
    return fallback_->run(t, rc);
  }

 private:
  static constexpr size_t kMaxRank = 8;

  // Resolves the view for input dims `in` (once per distinct dims).
  Status plan(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
    auto sliced = ops::compute_slice(in, starts_, ends_, axes_, steps_);
    if (!sliced.ok()) return invalid_argument("Slice: " + sliced.status().message());
    const size_t r = in.size();
    std::vector<int64_t> in_strides(r, 1), start(r, 0), step(r, 1), count = in;
    for (size_t i = r; i-- > 1;) in_strides[i - 1] = in_strides[i] * in[i];
    for (const ops::SliceAxis& s : *sliced) {
      const size_t a = static_cast<size_t>(s.axis);
      start[a] = s.start;
      step[a] = s.step;
      count[a] = s.count;
    }
    if (count != out) return internal_error("Slice: output dims do not match the slice");
    dims_ = in;
    valid_ = true;
    base_ = 0;
    out_dims_.clear();
    strides_.clear();
    empty_ = false;
    for (size_t i = 0; i < r; ++i) {
      if (count[i] == 0) empty_ = true;
      base_ += start[i] * in_strides[i];
      if (count[i] == 1) continue;
      const int64_t stride = step[i] * in_strides[i];
      if (!out_dims_.empty() && strides_.back() == stride * count[i]) {  // contiguous with the previous axis
        out_dims_.back() *= count[i];
        strides_.back() = stride;
        continue;
      }
      out_dims_.push_back(count[i]);
      strides_.push_back(stride);
    }
    if (out_dims_.empty()) {
      out_dims_.push_back(1);
      strides_.push_back(1);
    }
    merged_rank_ok_ = out_dims_.size() <= kMaxRank;
    return ok_status();
  }

  std::vector<int64_t> starts_, ends_;
  std::optional<std::vector<int64_t>> axes_, steps_;
  std::unique_ptr<CpuOp> fallback_;
  bool valid_ = false, empty_ = false, merged_rank_ok_ = true;
  std::vector<int64_t> dims_, out_dims_, strides_;
  int64_t base_ = 0;
};

// The constant int list of input `i` (or the attribute of that name, for opset < 10); nullopt
// when absent, and `*ok` false when given by a run-time tensor.
std::optional<std::vector<int64_t>> constant_ints(const ir::Node& node, int i, const char* attr, bool* ok) {
  const ir::Value* v = node.input(i);
  if (v && !v->constant) {
    if (!node.attrs.has(attr)) *ok = false;
    return std::nullopt;
  }
  return ops::ints_from_attr_or_input(node.attrs, attr, v ? &*v->constant : nullptr);
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_slice(const ir::Node& node, const CompileContext&) {
  if (ops::has_fused_epilogue(node) || !node.input(0) || node.num_outputs() != 1 || !node.output(0)) {
    return std::unique_ptr<CpuOp>();
  }
  const ir::DType dt = node.input(0)->type.dtype;
  if (dt == ir::DType::kUndefined) return std::unique_ptr<CpuOp>();
  const size_t esize = ir::dtype_size(dt);
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8) return std::unique_ptr<CpuOp>();
  bool ok = true;
  auto starts = constant_ints(node, 1, "starts", &ok);
  auto ends = constant_ints(node, 2, "ends", &ok);
  auto axes = constant_ints(node, 3, "axes", &ok);
  const ir::Value* sv = node.input(4);
  if (sv && !sv->constant) ok = false;
  std::optional<std::vector<int64_t>> steps;
  if (sv && sv->constant) steps = sv->constant->to_int_vector();
  if (!ok || !starts || !ends) return std::unique_ptr<CpuOp>();
  std::unique_ptr<CpuOp> fallback = make_ref_op(node);
  if (!fallback) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<SliceOp>(std::move(*starts), std::move(*ends), std::move(axes),
                                                          std::move(steps), std::move(fallback)));
}

}  // namespace nfuse::backends::cpu
