// Reference NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// The input is viewed as [N, C, D] (D = product of the trailing dims, 1 for 2-D input) and the
// target as [N, D]. Element (n, d) contributes -x[n, t, d] * w[t], where t = target[n, d] and
// w[t] = weight[t] (1 without weights); a target equal to ignore_index contributes 0 with weight
// 0. "mean" divides the sum by the sum of the weights, as the ONNX reference does (which for
// unweighted losses is the count of elements not ignored). Everything is computed in double and
// rounded once into the output type.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

struct LossGeometry {
  int64_t n = 0;
  int64_t c = 0;
  int64_t d = 1;
};

Result<LossGeometry> loss_geometry(const KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& t = a.in(1);
  if (x.rank() < 2) return a.error("input must have rank >= 2");
  LossGeometry g{x.dim(0), x.dim(1), 1};
  for (int i = 2; i < x.rank(); ++i) g.d *= x.dim(i);
  if (t.numel() != g.n * g.d) return a.error("target does not match the input's [N, d1, ...] dims");
  if (a.has_in(2) && a.in(2).numel() != g.c) return a.error("weight length does not match C");
  return g;
}

// Row-wise log-softmax over the class axis of x viewed as [N, C, D], in double.
std::vector<double> log_softmax_axis1(const ir::Tensor& x, const LossGeometry& g) {
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.d; ++d) {
      const int64_t base = n * g.c * g.d + d;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < g.c; ++c) max = std::max(max, x.get_double(base + c * g.d));
      double sum = 0.0;
      for (int64_t c = 0; c < g.c; ++c) sum += std::exp(x.get_double(base + c * g.d) - max);
      const double log_sum = std::log(sum) + max;
      for (int64_t c = 0; c < g.c; ++c) {
        out[static_cast<size_t>(base + c * g.d)] = x.get_double(base + c * g.d) - log_sum;
      }
    }
  }
  return out;
}

// The NLL of `log_prob` (x viewed as [N, C, D], read through `at`) into output 0.
template <typename At>
Status nll(KernelArgs& a, const LossGeometry& g, At&& at) {
  const ir::Tensor& target = a.in(1);
  const ir::Tensor* weight = a.has_in(2) ? &a.in(2) : nullptr;
  const bool has_ignore = a.attrs().has("ignore_index");
  const int64_t ignore_index = a.attrs().get_int("ignore_index", 0);
  const std::string reduction = a.attrs().get_string("reduction", "mean");
  ir::Tensor& out = a.out(0);
  const bool none = reduction == "none";
  if (none && out.numel() != g.n * g.d) return a.error("output size does not match the target");
  if (!none && out.numel() != 1) return a.error("reduced output must be a scalar");
  double sum = 0.0;
  double weight_sum = 0.0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.d; ++d) {
      const int64_t i = n * g.d + d;
      const int64_t t = target.get_int(i);
      double loss = 0.0;
      double w = 0.0;
      if (!has_ignore || t != ignore_index) {
        if (t < 0 || t >= g.c) {
          return a.error("target " + std::to_string(t) + " is outside [0, " + std::to_string(g.c) + ")");
        }
        w = weight ? weight->get_double(t) : 1.0;
        loss = -at((n * g.c + t) * g.d + d) * w;
      }
      if (none) ir::store_from_double(out.dtype(), out.raw(), i, loss);
      sum += loss;
      weight_sum += w;
    }
  }
  if (reduction == "sum") ir::store_from_double(out.dtype(), out.raw(), 0, sum);
  if (reduction == "mean") ir::store_from_double(out.dtype(), out.raw(), 0, sum / weight_sum);
  return ok_status();
}

Status nll_loss(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(const LossGeometry g, loss_geometry(a));
  const ir::Tensor& x = a.in(0);
  return nll(a, g, [&x](int64_t i) { return x.get_double(i); });
}

Status softmax_cross_entropy_loss(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(const LossGeometry g, loss_geometry(a));
  const std::vector<double> log_prob = log_softmax_axis1(a.in(0), g);
  if (a.num_outputs() > 1 && !a.out(1).empty()) {
    ir::Tensor& lp = a.out(1);
    if (lp.numel() != static_cast<int64_t>(log_prob.size())) return a.error("log_prob size does not match");
    for (size_t i = 0; i < log_prob.size(); ++i) {
      ir::store_from_double(lp.dtype(), lp.raw(), static_cast<int64_t>(i), log_prob[i]);
    }
  }
  return nll(a, g, [&log_prob](int64_t i) { return log_prob[static_cast<size_t>(i)]; });
}

}  // namespace

void register_loss_kernels(KernelRegistry& registry) {
  registry.add("NegativeLogLikelihoodLoss", nll_loss);
  registry.add("SoftmaxCrossEntropyLoss", softmax_cross_entropy_loss);
}

}  // namespace nfuse::backends::ref
