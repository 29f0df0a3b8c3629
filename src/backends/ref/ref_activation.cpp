// Reference kernels for activations. Float math runs in double and rounds once into the
// output type; integer paths (Relu, Shrink, PRelu, Clip) stay in the integer type.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

Status leaky_relu(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 0.01f);
  return map_float(a, [alpha](double x) { return x < 0 ? alpha * x : x; });
}

Status elu(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 1.0f);
  return map_float(a, [alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; });
}

Status selu(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 1.67326319217681884765625f);
  const double gamma = a.attrs().get_float("gamma", 1.05070102214813232421875f);
  return map_float(a, [alpha, gamma](double x) { return x <= 0 ? gamma * alpha * std::expm1(x) : gamma * x; });
}

Status celu(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 1.0f);
  return map_float(a, [alpha](double x) { return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)); });
}

Status sigmoid(KernelArgs& a) {
  return map_float(a, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}

Status hard_sigmoid(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 0.2f);
  const double beta = a.attrs().get_float("beta", 0.5f);
  return map_float(a, [alpha, beta](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); });
}

Status hard_swish(KernelArgs& a) {
  return map_float(a, [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); });
}

Status tanh_kernel(KernelArgs& a) {
  return map_float(a, [](double x) { return std::tanh(x); });
}

Status softplus_kernel(KernelArgs& a) { return map_float(a, softplus); }

Status softsign(KernelArgs& a) {
  return map_float(a, [](double x) { return x / (1.0 + std::fabs(x)); });
}

Status mish(KernelArgs& a) {
  return map_float(a, [](double x) { return x * std::tanh(softplus(x)); });
}

Status thresholded_relu(KernelArgs& a) {
  const double alpha = a.attrs().get_float("alpha", 1.0f);
  return map_float(a, [alpha](double x) { return x > alpha ? x : 0.0; });
}

Status relu(KernelArgs& a) {
  return map_numeric(a, [](auto v) -> decltype(v) {
    using C = decltype(v);
    if constexpr (std::is_unsigned_v<C>) return v;
    else return v < C(0) ? C(0) : v;  // NaN stays NaN, as numpy's maximum(x, 0)
  });
}

Status shrink(KernelArgs& a) {
  const double lambd = a.attrs().get_float("lambd", 0.5f);
  const double bias = a.attrs().get_float("bias", 0.0f);
  const ir::Tensor& x = a.in(0);
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = to_double(x.data<T>()[i]);
        const double r = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
        a.out(0).data<T>()[i] = cast_from_double<T>(r);
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

Status prelu(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& slope = a.in(1);
  std::vector<int64_t> slope_dims = slope.dims();
  if (a.node.opset > 0 && a.node.opset < 7 && slope.rank() == 1 && x.rank() >= 2) {
    // Legacy per-channel slope (see infer_prelu): [C] -> [C, 1, ..., 1] aligned at axis 1.
    if (slope.dim(0) != 1 && slope.dim(0) != x.dim(1)) return a.error("slope does not match the channels");
    slope_dims.assign(static_cast<size_t>(x.rank() - 1), 1);
    slope_dims[0] = slope.dim(0);
  }
  if (!broadcasts_to(slope_dims, x.dims())) return a.error("slope does not broadcast to X");
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xs = x.data<T>();
      const T* ss = slope.data<T>();
      T* out = a.out(0).data<T>();
      for_each_broadcast(x.dims(), {x.dims(), slope_dims}, [&](int64_t i, const std::vector<int64_t>& off) {
        const auto v = load(xs[off[0]]);
        const auto s = load(ss[off[1]]);
        if constexpr (is_float_v<T>) {
          out[i] = from_double<T>(v < 0 ? static_cast<double>(s) * v : static_cast<double>(v));
        } else if constexpr (std::is_unsigned_v<T>) {
          out[i] = v;
        } else {
          out[i] = v < 0 ? wrap_mul(s, v) : v;
        }
      });
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

// min > max gives max everywhere (numpy's minimum(maximum(x, min), max)); NaN propagates.
Status clip(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const bool legacy = a.node.opset > 0 && a.node.opset < 11;
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      C lo = std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::max();
      if constexpr (std::is_floating_point_v<C>) {
        // Infinite bounds keep +-inf inputs unchanged when a bound is absent.
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
        if (legacy) {
          lo = static_cast<C>(a.attrs().get_float("min", -std::numeric_limits<float>::infinity()));
          hi = static_cast<C>(a.attrs().get_float("max", std::numeric_limits<float>::infinity()));
        }
      }
      if (a.has_in(1) && a.in(1).numel() == 1) lo = load(a.in(1).data<T>()[0]);
      if (a.has_in(2) && a.in(2).numel() == 1) hi = load(a.in(2).data<T>()[0]);
      for (int64_t i = 0; i < x.numel(); ++i) {
        C v = load(x.data<T>()[i]);
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        a.out(0).data<T>()[i] = store<T>(v);
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

}  // namespace

void register_activation_kernels(KernelRegistry& registry) {
  registry.add("LeakyRelu", leaky_relu);
  registry.add("Elu", elu);
  registry.add("Selu", selu);
  registry.add("Celu", celu);
  registry.add("Sigmoid", sigmoid);
  registry.add("HardSigmoid", hard_sigmoid);
  registry.add("HardSwish", hard_swish);
  registry.add("Tanh", tanh_kernel);
  registry.add("Softplus", softplus_kernel);
  registry.add("Softsign", softsign);
  registry.add("Mish", mish);
  registry.add("ThresholdedRelu", thresholded_relu);
  registry.add("Relu", relu);
  registry.add("Shrink", shrink);
  registry.add("PRelu", prelu);
  registry.add("Clip", clip);
}

}  // namespace nfuse::backends::ref
