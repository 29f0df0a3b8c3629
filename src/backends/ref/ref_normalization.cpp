// Reference normalization kernels, all in double: BatchNormalization (inference and opset-14+
// training statistics), InstanceNormalization, LayerNormalization, MeanVarianceNormalization,
// LRN and LpNormalization. Variances are population variances computed in two passes.
#include <cmath>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "ops/normalization.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::ref {
namespace {

// X as [N, C, S] where S is the product of the trailing dims.
struct NcsView {
  int64_t n, c, s;
};
NcsView ncs_of(const ir::Tensor& x) {
  const int64_t n = x.dim(0), c = x.dim(1);
  return {n, c, n * c != 0 ? x.numel() / (n * c) : 0};
}

// y = scale * (x - mean) / sqrt(var + epsilon) + bias per channel (per channel and position for
// the opset < 9 spatial = 0 form, whose parameters have C * S elements).
// Training mode (opset 14+) normalizes with the batch mean and population variance instead and
// writes running = input * momentum + batch * (1 - momentum) to outputs 1 and 2 when present.
Status batch_normalization(KernelArgs& a) {
  const ir::Tensor& xt = a.in(0);
  const NcsView v = ncs_of(xt);
  const bool training = ops::batch_norm_training(a.node);
  const bool per_channel = a.in(1).numel() == v.c;
  const int64_t expected = per_channel || training ? v.c : v.c * v.s;
  std::vector<std::vector<double>> p;  // scale, bias, mean, var
  for (int i = 1; i <= 4; ++i) {
    if (a.in(i).numel() != expected) {
      return a.error("parameter input " + std::to_string(i) + " has " + std::to_string(a.in(i).numel()) +
                     " elements, expected " + std::to_string(expected));
    }
    p.push_back(to_doubles(a.in(i)));
  }
  const double eps = a.attrs().get_float("epsilon", 1e-5f);
  const std::vector<double> x = to_doubles(xt);
  std::vector<double> mean = p[2], var = p[3];
  if (training) {
    const double count = static_cast<double>(v.n * v.s);
    for (int64_t c = 0; c < v.c; ++c) {
      double sum = 0.0, sq = 0.0;
      for (int64_t n = 0; n < v.n; ++n)
        for (int64_t s = 0; s < v.s; ++s) sum += x[static_cast<size_t>((n * v.c + c) * v.s + s)];
      const double m = count > 0 ? sum / count : 0.0;
      for (int64_t n = 0; n < v.n; ++n)
        for (int64_t s = 0; s < v.s; ++s) {
          const double d = x[static_cast<size_t>((n * v.c + c) * v.s + s)] - m;
          sq += d * d;
        }
      mean[static_cast<size_t>(c)] = m;
      var[static_cast<size_t>(c)] = count > 0 ? sq / count : 0.0;
    }
    const double momentum = a.attrs().get_float("momentum", 0.9f);
    for (int o = 1; o <= 2 && o < a.num_outputs(); ++o) {
      if (a.out(o).empty()) continue;
      const std::vector<double>& in = p[static_cast<size_t>(o + 1)];
      const std::vector<double>& batch = o == 1 ? mean : var;
      std::vector<double> running(in.size());
      for (size_t c = 0; c < in.size(); ++c) running[c] = in[c] * momentum + batch[c] * (1.0 - momentum);
      from_doubles(running, a.out(o));
    }
  }
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < v.n; ++n)
    for (int64_t c = 0; c < v.c; ++c)
      for (int64_t s = 0; s < v.s; ++s) {
        const size_t j = static_cast<size_t>(expected == v.c ? c : c * v.s + s);
        const size_t i = static_cast<size_t>((n * v.c + c) * v.s + s);
        y[i] = p[0][j] * (x[i] - mean[j]) / std::sqrt(var[j] + eps) + p[1][j];
      }
  from_doubles(y, a.out(0));
  return ok_status();
}

// Mean and population variance of n values.
void moments(const double* v, int64_t n, double* mean, double* var) {
  double sum = 0.0, sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += v[i];
  *mean = n ? sum / static_cast<double>(n) : 0.0;
  for (int64_t i = 0; i < n; ++i) sq += (v[i] - *mean) * (v[i] - *mean);
  *var = n ? sq / static_cast<double>(n) : 0.0;
}

// y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], statistics per (n, c) plane.
Status instance_normalization(KernelArgs& a) {
  const NcsView v = ncs_of(a.in(0));
  if (a.in(1).numel() != v.c || a.in(2).numel() != v.c) return a.error("scale and B must have C elements");
  const std::vector<double> x = to_doubles(a.in(0)), scale = to_doubles(a.in(1)), bias = to_doubles(a.in(2));
  const double eps = a.attrs().get_float("epsilon", 1e-5f);
  std::vector<double> y(x.size());
  for (int64_t plane = 0; plane < v.n * v.c; ++plane) {
    const size_t c = static_cast<size_t>(plane % v.c);
    const size_t base = static_cast<size_t>(plane * v.s);
    double mean, var;
    moments(x.data() + base, v.s, &mean, &var);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (size_t i = base; i < base + static_cast<size_t>(v.s); ++i) y[i] = scale[c] * (x[i] - mean) * inv + bias[c];
  }
  from_doubles(y, a.out(0));
  return ok_status();
}

// X seen as [outer, inner] split at `axis`; per row: y = (x - mean) * inv_std * Scale + B with
// Scale and B broadcast over the inner dims; Mean and InvStdDev (optional outputs) per row.
Status layer_normalization(KernelArgs& a) {
  const ir::Tensor& xt = a.in(0);
  auto axis = ops::normalize_axis(a.attrs().get_int("axis", -1), xt.rank());
  if (!axis) return a.error("attribute 'axis' is out of range");
  const std::vector<int64_t> inner_dims(xt.dims().begin() + *axis, xt.dims().end());
  const int64_t inner = product(inner_dims);
  const int64_t outer = inner ? xt.numel() / inner : 0;
  std::vector<std::vector<int64_t>> param_strides;
  for (int i = 1; i <= 2; ++i) {
    if (!a.has_in(i)) continue;
    const std::vector<int64_t>& d = a.in(i).dims();
    bool ok = d.size() <= inner_dims.size();
    for (size_t k = 0; ok && k < d.size(); ++k) {
      const int64_t target = inner_dims[inner_dims.size() - d.size() + k];
      ok = d[k] == target || d[k] == 1;
    }
    if (!ok) return a.error("Scale/B shape " + ir::dims_to_string(d) + " does not broadcast to " + ir::dims_to_string(inner_dims));
  }
  const std::vector<int64_t> inner_index = all_indices(inner_dims);
  auto param_offsets = [&](int i) {
    std::vector<int64_t> off(static_cast<size_t>(inner), 0);
    if (!a.has_in(i)) return off;
    const std::vector<int64_t> st = broadcast_strides(a.in(i).dims(), inner_dims);
    for (int64_t j = 0; j < inner; ++j)
      for (size_t d = 0; d < inner_dims.size(); ++d) off[static_cast<size_t>(j)] += inner_index[static_cast<size_t>(j) * inner_dims.size() + d] * st[d];
    return off;
  };
  const std::vector<int64_t> scale_off = param_offsets(1), bias_off = param_offsets(2);
  const std::vector<double> x = to_doubles(xt), scale = to_doubles(a.in(1));
  const std::vector<double> bias = a.has_in(2) ? to_doubles(a.in(2)) : std::vector<double>{};
  const double eps = a.attrs().get_float("epsilon", 1e-5f);
  std::vector<double> y(x.size()), means(static_cast<size_t>(outer)), inv_stds(static_cast<size_t>(outer));
  for (int64_t r = 0; r < outer; ++r) {
    const size_t base = static_cast<size_t>(r * inner);
    double mean, var;
    moments(x.data() + base, inner, &mean, &var);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j) {
      const size_t i = base + static_cast<size_t>(j);
      y[i] = (x[i] - mean) * inv * scale[static_cast<size_t>(scale_off[static_cast<size_t>(j)])];
      if (!bias.empty()) y[i] += bias[static_cast<size_t>(bias_off[static_cast<size_t>(j)])];
    }
    means[static_cast<size_t>(r)] = mean;
    inv_stds[static_cast<size_t>(r)] = inv;
  }
  from_doubles(y, a.out(0));
  if (a.num_outputs() > 1 && !a.out(1).empty()) from_doubles(means, a.out(1));
  if (a.num_outputs() > 2 && !a.out(2).empty()) from_doubles(inv_stds, a.out(2));
  return ok_status();
}

// y = (x - mean) / (sqrt(var) + 1e-9) with statistics over `axes` (default 0, 2, 3), as the
// ONNX function body defines it.
Status mean_variance_normalization(KernelArgs& a) {
  const ir::Tensor& xt = a.in(0);
  std::vector<int64_t> reduced = xt.dims();
  for (int64_t ax : a.attrs().get_ints("axes", {0, 2, 3})) {
    auto n = ops::normalize_axis(ax, xt.rank());
    if (!n) return a.error("axis " + std::to_string(ax) + " is out of range");
    reduced[static_cast<size_t>(*n)] = 1;
  }
  const std::vector<double> x = to_doubles(xt);
  const int64_t groups = product(reduced);
  const double count = groups ? static_cast<double>(xt.numel()) / static_cast<double>(groups) : 0.0;
  std::vector<double> mean(static_cast<size_t>(groups), 0.0), var(static_cast<size_t>(groups), 0.0);
  std::vector<int64_t> group_of(x.size());
  for_each_broadcast(xt.dims(), {reduced}, [&](int64_t i, const std::vector<int64_t>& off) {
    group_of[static_cast<size_t>(i)] = off[0];
  });
  for (size_t i = 0; i < x.size(); ++i) mean[static_cast<size_t>(group_of[i])] += x[i] / count;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - mean[static_cast<size_t>(group_of[i])];
    var[static_cast<size_t>(group_of[i])] += d * d / count;
  }
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t g = static_cast<size_t>(group_of[i]);
    y[i] = (x[i] - mean[g]) / (std::sqrt(var[g]) + 1e-9);
  }
  from_doubles(y, a.out(0));
  return ok_status();
}

// y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta
Status lrn(KernelArgs& a) {
  const NcsView v = ncs_of(a.in(0));
  const int64_t size = a.attrs().get_int("size", 1);
  const double alpha = a.attrs().get_float("alpha", 1e-4f);
  const double beta = a.attrs().get_float("beta", 0.75f);
  const double bias = a.attrs().get_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const std::vector<double> x = to_doubles(a.in(0));
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < v.n; ++n)
    for (int64_t c = 0; c < v.c; ++c)
      for (int64_t s = 0; s < v.s; ++s) {
        double sq = 0.0;
        for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(v.c - 1, c + after); ++k) {
          const double e = x[static_cast<size_t>((n * v.c + k) * v.s + s)];
          sq += e * e;
        }
        const size_t i = static_cast<size_t>((n * v.c + c) * v.s + s);
        y[i] = x[i] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
      }
  from_doubles(y, a.out(0));
  return ok_status();
}

// y = x / ||x||_p along `axis` (p = 1 or 2); a zero norm gives zeros rather than NaNs.
Status lp_normalization(KernelArgs& a) {
  const ir::Tensor& xt = a.in(0);
  auto axis = ops::normalize_axis(a.attrs().get_int("axis", -1), xt.rank());
  if (!axis) return a.error("attribute 'axis' is out of range");
  const int64_t p = a.attrs().get_int("p", 2);
  const int64_t len = xt.dim(*axis);
  const int64_t inner = product(std::vector<int64_t>(xt.dims().begin() + *axis + 1, xt.dims().end()));
  const int64_t outer = len * inner != 0 ? xt.numel() / (len * inner) : 0;
  const std::vector<double> x = to_doubles(xt);
  std::vector<double> y(x.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + i); };
      double norm = 0.0;
      for (int64_t k = 0; k < len; ++k) norm += p == 1 ? std::fabs(x[at(k)]) : x[at(k)] * x[at(k)];
      if (p == 2) norm = std::sqrt(norm);
      if (norm == 0.0) continue;
      for (int64_t k = 0; k < len; ++k) y[at(k)] = x[at(k)] / norm;
    }
  from_doubles(y, a.out(0));
  return ok_status();
}

}  // namespace

void register_normalization_kernels(KernelRegistry& registry) {
  registry.add("BatchNormalization", batch_normalization);
  registry.add("InstanceNormalization", instance_normalization);
  registry.add("LayerNormalization", layer_normalization);
  registry.add("MeanVarianceNormalization", mean_variance_normalization);
  registry.add("LRN", lrn);
  registry.add("LpNormalization", lp_normalization);
}

}  // namespace nfuse::backends::ref
