// Unique (opset 11): unique values or slices, with first-occurrence indices, inverse indices
// and counts. The output size depends on the values, so infer runs the algorithm when x is
// known (always at run time).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"
#include "ops/unique_util.h"

namespace nfuse::ops {

namespace {

// -1, 0, 1 comparing elements a and b of x; a total order (NaN last, equal to NaN).
template <typename T>
int compare_elems(const T* d, int64_t a, int64_t b) {
  double x, y;
  if constexpr (std::is_same_v<T, ir::Half>) {
    x = ir::half_to_float(d[a].bits), y = ir::half_to_float(d[b].bits);
  } else if constexpr (std::is_same_v<T, ir::BFloat16>) {
    x = ir::bf16_to_float(d[a].bits), y = ir::bf16_to_float(d[b].bits);
  } else if constexpr (std::is_integral_v<T>) {
    return d[a] < d[b] ? -1 : (d[b] < d[a] ? 1 : 0);  // exact for 64-bit integers
  } else {
    x = static_cast<double>(d[a]), y = static_cast<double>(d[b]);
  }
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) == std::isnan(y) ? 0 : (std::isnan(x) ? 1 : -1);
  return x < y ? -1 : (y < x ? 1 : 0);
}

}  // namespace

UniqueResult compute_unique(const ir::Tensor& x, std::optional<int> axis, bool sorted) {
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis) {
    n = x.dim(*axis);
    for (int d = 0; d < *axis; ++d) outer *= x.dim(d);
    for (int d = *axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  // Lexicographic comparison of slices p and q in the order (outer, inner) of their elements.
  auto compare = [&](int64_t p, int64_t q) {
    int c = 0;
    ir::visit_dtype(x.dtype(), [&]<typename T>() {
      const T* d = x.data<T>();
      for (int64_t o = 0; o < outer && c == 0; ++o)
        for (int64_t i = 0; i < inner && c == 0; ++i)
          c = compare_elems(d, (o * n + p) * inner + i, (o * n + q) * inner + i);
    });
    return c;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return compare(p, q) < 0; });
  // Groups of equal slices; stable sorting puts each group's first occurrence first.
  std::vector<std::pair<int64_t, int64_t>> groups;  // (first index, count)
  std::vector<int64_t> group_of(static_cast<size_t>(n));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compare(order[k - 1], order[k]) != 0) groups.emplace_back(order[k], 0);
    ++groups.back().second;
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(groups.size()) - 1;
  }
  std::vector<int64_t> position(groups.size());
  std::iota(position.begin(), position.end(), int64_t{0});
  if (!sorted) {
    std::vector<int64_t> by_first(groups.size());
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
      return groups[static_cast<size_t>(a)].first < groups[static_cast<size_t>(b)].first;
    });
    for (size_t k = 0; k < by_first.size(); ++k) position[static_cast<size_t>(by_first[k])] = static_cast<int64_t>(k);
  }
  UniqueResult r;
  r.first.resize(groups.size());
  r.counts.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    r.first[static_cast<size_t>(position[g])] = groups[g].first;
    r.counts[static_cast<size_t>(position[g])] = groups[g].second;
  }
  r.inverse.resize(static_cast<size_t>(n));
  for (size_t s = 0; s < r.inverse.size(); ++s) r.inverse[s] = position[static_cast<size_t>(group_of[s])];
  return r;
}

namespace {

Status infer_unique(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  std::optional<int> axis;
  if (ctx.attrs().has("axis") && in.rank_known()) {
    const int64_t a = ctx.attrs().get_int("axis", 0);
    axis = normalize_axis(a, in.rank());
    if (!axis) return ctx.error(axis_error(a, in.rank()));
  }
  ir::Dim count;
  if (const ir::Tensor* x = ctx.value(0)) {
    count = ir::Dim(static_cast<int64_t>(compute_unique(*x, axis, ctx.attrs().get_int("sorted", 1) != 0).first.size()));
  }
  ir::Shape y = ir::Shape({count});
  ir::Dim slices;
  if (ctx.attrs().has("axis")) {
    y = ir::Shape::unknown_rank();
    if (axis) {
      y = in;
      y[*axis] = count;
      slices = in[*axis];
    }
  } else if (auto n = in.static_numel()) {
    slices = ir::Dim(*n);
  }
  ctx.output(0) = {ctx.dtype(0), y};
  if (ctx.num_outputs() > 1) ctx.output(1) = {ir::DType::kI64, ir::Shape({count})};
  if (ctx.num_outputs() > 2) ctx.output(2) = {ir::DType::kI64, ir::Shape({slices})};
  if (ctx.num_outputs() > 3) ctx.output(3) = {ir::DType::kI64, ir::Shape({count})};
  return ok_status();
}

}  // namespace

void register_unique_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Unique", .max_outputs = 4, .infer = infer_unique});
}

}  // namespace nfuse::ops
