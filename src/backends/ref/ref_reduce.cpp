// Reference kernels for Reduce* and ArgMax/ArgMin.
//
// Float inputs (and the non-linear L2/LogSum/LogSumExp on integers) accumulate in double.
// Integer Sum/Mean/Prod/L1/SumSquare accumulate in wrapping 64-bit arithmetic, which is
// exact modulo 2^64 and so truncates to numpy's wrapped result in the output type; integer
// Mean truncates toward zero. Reducing an empty set gives the identity of the reduction
// (0 for sums, 1 for Prod, -inf/+inf or the type's limits for Max/Min, -inf for LogSum);
// float Mean of nothing is NaN, integer Mean of nothing 0.
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::ref {
namespace {

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <Reduce K>
double double_init() {
  if (K == Reduce::kProd) return 1.0;
  if (K == Reduce::kMax || K == Reduce::kLogSumExp) return -std::numeric_limits<double>::infinity();
  if (K == Reduce::kMin) return std::numeric_limits<double>::infinity();
  return 0.0;
}

template <Reduce K>
double double_step(double acc, double v) {
  switch (K) {
    case Reduce::kSum:
    case Reduce::kMean:
    case Reduce::kLogSum: return acc + v;
    case Reduce::kProd: return acc * v;
    case Reduce::kL1: return acc + std::fabs(v);
    case Reduce::kL2:
    case Reduce::kSumSquare: return acc + v * v;
    case Reduce::kMax: return (std::isnan(v) || v > acc) ? v : acc;  // NaN sticks: v > NaN is false
    case Reduce::kMin: return (std::isnan(v) || v < acc) ? v : acc;
    case Reduce::kLogSumExp: return acc;  // two passes, see reduce_double
  }
  return acc;
}

template <Reduce K>
double double_finish(double acc, int64_t count) {
  if (K == Reduce::kMean) return acc / static_cast<double>(count);
  if (K == Reduce::kL2) return std::sqrt(acc);
  if (K == Reduce::kLogSum) return std::log(acc);
  return acc;
}

// Calls fn(input_index, output_index) for every input element; `kept` is the input dims with
// reduced axes set to 1, so broadcasting the output over the input maps each input element
// to the output element it reduces into.
template <typename Fn>
void for_each_reduced(const ir::Tensor& x, const std::vector<int64_t>& kept, Fn&& fn) {
  for_each_broadcast(x.dims(), {kept}, [&](int64_t i, const std::vector<int64_t>& off) { fn(i, off[0]); });
}

template <Reduce K, typename T>
void reduce_double(const ir::Tensor& x, const std::vector<int64_t>& kept, int64_t count, T* out, int64_t n_out) {
  std::vector<double> acc(static_cast<size_t>(n_out), double_init<K>());
  const T* xs = x.data<T>();
  if (K == Reduce::kLogSumExp) {
    // log(sum(exp(x - max))) + max: exp never overflows.
    std::vector<double> max(static_cast<size_t>(n_out), -std::numeric_limits<double>::infinity());
    for_each_reduced(x, kept, [&](int64_t i, int64_t o) {
      max[static_cast<size_t>(o)] = std::max(max[static_cast<size_t>(o)], to_double(xs[i]));
    });
    std::fill(acc.begin(), acc.end(), 0.0);
    for_each_reduced(x, kept, [&](int64_t i, int64_t o) {
      const double m = max[static_cast<size_t>(o)];
      acc[static_cast<size_t>(o)] += std::isinf(m) ? 0.0 : std::exp(to_double(xs[i]) - m);
    });
    for (int64_t o = 0; o < n_out; ++o) {
      const double m = max[static_cast<size_t>(o)];
      out[o] = cast_from_double<T>(std::isinf(m) ? m : std::log(acc[static_cast<size_t>(o)]) + m);
    }
    return;
  }
  for_each_reduced(x, kept, [&](int64_t i, int64_t o) {
    acc[static_cast<size_t>(o)] = double_step<K>(acc[static_cast<size_t>(o)], to_double(xs[i]));
  });
  for (int64_t o = 0; o < n_out; ++o) out[o] = cast_from_double<T>(double_finish<K>(acc[static_cast<size_t>(o)], count));
}

template <typename T>
bool is_negative(T v) {
  if constexpr (std::is_signed_v<T>) return v < 0;
  else return false;
}

template <Reduce K, typename T>
void reduce_int(const ir::Tensor& x, const std::vector<int64_t>& kept, int64_t count, T* out, int64_t n_out) {
  const T* xs = x.data<T>();
  if constexpr (K == Reduce::kMax || K == Reduce::kMin) {
    std::vector<T> acc(static_cast<size_t>(n_out),
                       K == Reduce::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    for_each_reduced(x, kept, [&](int64_t i, int64_t o) {
      T& a = acc[static_cast<size_t>(o)];
      a = K == Reduce::kMax ? std::max(a, xs[i]) : std::min(a, xs[i]);
    });
    std::memcpy(out, acc.data(), acc.size() * sizeof(T));
  } else {
    std::vector<uint64_t> acc(static_cast<size_t>(n_out), K == Reduce::kProd ? 1 : 0);
    for_each_reduced(x, kept, [&](int64_t i, int64_t o) {
      uint64_t& a = acc[static_cast<size_t>(o)];
      const uint64_t v = static_cast<uint64_t>(xs[i]);  // sign-extends: exact modulo 2^64
      if (K == Reduce::kProd) a *= v;
      else if (K == Reduce::kSumSquare) a += v * v;
      else if (K == Reduce::kL1) a += is_negative(xs[i]) ? uint64_t{0} - v : v;
      else a += v;
    });
    for (int64_t o = 0; o < n_out; ++o) {
      uint64_t a = acc[static_cast<size_t>(o)];
      if (K == Reduce::kMean) {
        if (count == 0) a = 0;
        else if (std::is_signed_v<T>) a = static_cast<uint64_t>(static_cast<int64_t>(a) / count);
        else a /= static_cast<uint64_t>(count);
      }
      out[o] = static_cast<T>(a);
    }
  }
}

template <Reduce K>
Status reduce_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  NFUSE_ASSIGN_OR_RETURN(ops::ReduceAxes axes,
                         ops::resolve_reduce_axes(a.node, a.has_in(1) ? &a.in(1) : nullptr, x.rank()));
  if (axes.noop) {
    if (y.dtype() != x.dtype() || y.numel() != x.numel()) return a.error("output does not match the input");
    if (x.bytes()) std::memcpy(y.raw(), x.raw(), x.bytes());
    return ok_status();
  }
  std::vector<int64_t> kept = x.dims();
  int64_t count = 1;
  for (size_t d = 0; d < kept.size(); ++d) {
    if (axes.reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
    }
  }
  const int64_t n_out = ir::shape_numel(kept);
  if (y.dtype() != x.dtype() || y.numel() != n_out) return a.error("output does not match the reduced shape");
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      constexpr bool kViaDouble = is_float_v<T> || K == Reduce::kL2 || K == Reduce::kLogSum || K == Reduce::kLogSumExp;
      if constexpr (kViaDouble) reduce_double<K, T>(x, kept, count, y.data<T>(), n_out);
      else reduce_int<K, T>(x, kept, count, y.data<T>(), n_out);
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

// First (or with select_last_index, last) position of the extremum along `axis`; NaN
// elements never win.
template <bool kMax>
Status arg_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  auto axis = ops::normalize_axis(a.attrs().get_int("axis", 0), x.rank());
  if (!axis) return a.error("axis is out of range");
  const bool last = a.attrs().get_int("select_last_index", 0) != 0;
  int64_t outer = 1, n = x.dim(*axis), inner = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < *axis) outer *= x.dim(d);
    if (d > *axis) inner *= x.dim(d);
  }
  if (a.out(0).dtype() != ir::DType::kI64 || a.out(0).numel() != outer * inner) {
    return a.error("output does not match the reduced shape");
  }
  int64_t* out = a.out(0).data<int64_t>();
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xs = x.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
          int64_t best = 0;
          bool found = false;
          compute_t<T> best_v{};
          for (int64_t k = 0; k < n; ++k) {
            const compute_t<T> v = load(xs[(o * n + k) * inner + in]);
            if constexpr (is_float_v<T>) {
              if (std::isnan(static_cast<double>(v))) continue;
            }
            const bool better = kMax ? (last ? v >= best_v : v > best_v) : (last ? v <= best_v : v < best_v);
            if (!found || better) {
              best = k;
              best_v = v;
              found = true;
            }
          }
          out[o * inner + in] = best;
        }
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

}  // namespace

void register_reduce_kernels(KernelRegistry& registry) {
  registry.add("ReduceSum", reduce_kernel<Reduce::kSum>);
  registry.add("ReduceMean", reduce_kernel<Reduce::kMean>);
  registry.add("ReduceMax", reduce_kernel<Reduce::kMax>);
  registry.add("ReduceMin", reduce_kernel<Reduce::kMin>);
  registry.add("ReduceProd", reduce_kernel<Reduce::kProd>);
  registry.add("ReduceL1", reduce_kernel<Reduce::kL1>);
  registry.add("ReduceL2", reduce_kernel<Reduce::kL2>);
  registry.add("ReduceLogSum", reduce_kernel<Reduce::kLogSum>);
  registry.add("ReduceLogSumExp", reduce_kernel<Reduce::kLogSumExp>);
  registry.add("ReduceSumSquare", reduce_kernel<Reduce::kSumSquare>);
  registry.add("ArgMax", arg_kernel<true>);
  registry.add("ArgMin", arg_kernel<false>);
}

}  // namespace nfuse::backends::ref
