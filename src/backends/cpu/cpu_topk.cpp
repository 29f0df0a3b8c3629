// TopK along any axis, lines in parallel: each line's k best come from a partial sort (n log k
// instead of ref's full stable sort) under a total order, value first and index second, so
// the result is the one ref's stable sort gives: ties keep the smaller index first, NaN counts
// as larger than every number, and the k values come out sorted whatever `sorted` says (ONNX
// leaves that order unspecified when sorted = 0).
#include <algorithm>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "ops/topk_order.h"

namespace nfuse::backends::cpu {

namespace {

class TopKOp final : public CpuOp {
 public:
  TopKOp(int64_t axis, bool largest) : axis_(axis), largest_(largest) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& values = *t.outputs[0];
    ir::Tensor* indices = t.outputs.size() > 1 && !t.outputs[1]->empty() ? t.outputs[1] : nullptr;
    const int64_t rank = x.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank) return invalid_argument("TopK: axis " + std::to_string(axis_) + " is out of range");
    const int64_t n = x.dim(static_cast<int>(axis));
    const int64_t k = values.dim(static_cast<int>(axis));
    if (k > n) return invalid_argument("TopK: k exceeds the axis size");
    if (indices && indices->dtype() != ir::DType::kI64) return invalid_argument("TopK: indices must be int64");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(static_cast<int>(d));
    switch (x.dtype()) {
      case ir::DType::kF32: return select<float>(x, values, indices, outer, n, inner, k, rc);
      case ir::DType::kF64: return select<double>(x, values, indices, outer, n, inner, k, rc);
      case ir::DType::kI32: return select<int32_t>(x, values, indices, outer, n, inner, k, rc);
      case ir::DType::kI64: return select<int64_t>(x, values, indices, outer, n, inner, k, rc);
      default: return invalid_argument("TopK: unsupported dtype");
    }
  }

 private:
  template <typename T>
  Status select(const ir::Tensor& x, ir::Tensor& values, ir::Tensor* indices, int64_t outer, int64_t n, int64_t inner,
                int64_t k, RunContext& rc) const {
    if (k == 0 || outer * inner == 0) return ok_status();
    const T* in = x.data<T>();
    T* out = values.data<T>();
    int64_t* idx_out = indices ? indices->data<int64_t>() : nullptr;
    const size_t lines = static_cast<size_t>(outer * inner);
    // Parts of at least ~16K elements, so small TopKs stay on one thread.
    const size_t per_part = std::max<size_t>(1, 16384 / static_cast<size_t>(std::max<int64_t>(n, 1)));
    const bool largest = largest_;
    rc.pool.run((lines + per_part - 1) / per_part, [&](size_t part, size_t) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::vector<T> line(static_cast<size_t>(n));
      const size_t l1 = std::min(lines, (part + 1) * per_part);
      for (size_t l = part * per_part; l < l1; ++l) {
        const int64_t o = static_cast<int64_t>(l) / inner, i = static_cast<int64_t>(l) % inner;
        const T* src = in + o * n * inner + i;
        for (int64_t j = 0; j < n; ++j) line[static_cast<size_t>(j)] = src[j * inner];
        std::iota(order.begin(), order.end(), int64_t{0});
        auto before = [&](int64_t p, int64_t q) {
          const T a = line[static_cast<size_t>(p)], b = line[static_cast<size_t>(q)];
          const bool ab = largest ? ops::topk_greater(a, b) : ops::topk_greater(b, a);
          const bool ba = largest ? ops::topk_greater(b, a) : ops::topk_greater(a, b);
          return ab || (!ba && p < q);
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        const int64_t dst = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t from = order[static_cast<size_t>(j)];
          out[dst + j * inner] = line[static_cast<size_t>(from)];
          if (idx_out) idx_out[dst + j * inner] = from;
        }
      }
    });
    return ok_status();
  }

  int64_t axis_;
  bool largest_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_topk(const ir::Node& node, const CompileContext&) {
  const ir::Value* x = node.input(0);
  if (!x) return std::unique_ptr<CpuOp>();
  const ir::DType dt = x->type.dtype;
  if (dt != ir::DType::kF32 && dt != ir::DType::kF64 && dt != ir::DType::kI32 && dt != ir::DType::kI64) {
    return std::unique_ptr<CpuOp>();
  }
  return std::unique_ptr<CpuOp>(
      std::make_unique<TopKOp>(node.attrs.get_int("axis", -1), node.attrs.get_int("largest", 1) != 0));
}

}  // namespace nfuse::backends::cpu
