// Reference MatMul, Gemm, MatMulInteger and QLinearMatMul. Float types accumulate in double;
// integer MatMul wraps modulo 2^bits like the integer type itself (computed in uint64).
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"
#include "ops/matmul_geometry.h"

namespace nfuse::backends::ref {
namespace {

// y[t] = A[a_matrix[t]] x B[b_matrix[t]] for every batch index t.
template <typename Acc>
std::vector<Acc> batched_matmul(const ops::MatMulGeometry& g, const std::vector<Acc>& a, const std::vector<Acc>& b) {
  std::vector<Acc> y(g.a_matrix.size() * static_cast<size_t>(g.m * g.n), Acc{0});
  for (size_t t = 0; t < g.a_matrix.size(); ++t) {
    const Acc* am = a.data() + g.a_matrix[t] * g.m * g.k;
    const Acc* bm = b.data() + g.b_matrix[t] * g.k * g.n;
    Acc* ym = y.data() + static_cast<int64_t>(t) * g.m * g.n;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        Acc acc{0};
        for (int64_t p = 0; p < g.k; ++p) acc += am[i * g.k + p] * bm[p * g.n + j];
        ym[i * g.n + j] = acc;
      }
  }
  return y;
}

std::vector<uint64_t> to_wrapping(const ir::Tensor& t) {
  std::vector<uint64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<uint64_t>(t.get_int(i));
  return v;
}

Status matmul(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::MatMulGeometry g, ops::resolve_matmul(a.in(0).dims(), a.in(1).dims()));
  ir::Tensor& out = a.out(0);
  if (ir::dtype_is_float(out.dtype())) {
    from_doubles(batched_matmul(g, to_doubles(a.in(0)), to_doubles(a.in(1))), out);
    return ok_status();
  }
  const std::vector<uint64_t> y = batched_matmul(g, to_wrapping(a.in(0)), to_wrapping(a.in(1)));
  bool ok = true;
  ir::visit_dtype(out.dtype(), [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      for (size_t i = 0; i < y.size(); ++i) out.data<T>()[i] = static_cast<T>(y[i]);
    } else {
      ok = false;
    }
  });
  return ok ? ok_status() : a.error("unsupported dtype");
}

// Y = alpha * A' B' + beta * C in double (integer types too: exact below 2^53).
Status gemm(KernelArgs& a) {
  const ir::Tensor& at = a.in(0);
  const ir::Tensor& bt = a.in(1);
  if (at.rank() != 2 || bt.rank() != 2) return a.error("A and B must be 2-D");
  const bool ta = a.attrs().get_int("transA", 0) == 1;
  const bool tb = a.attrs().get_int("transB", 0) == 1;
  const int64_t m = at.dim(ta ? 1 : 0), k = at.dim(ta ? 0 : 1);
  const int64_t n = bt.dim(tb ? 0 : 1);
  if (bt.dim(tb ? 1 : 0) != k) return a.error("inner dims differ");
  const double alpha = a.attrs().get_float("alpha", 1.0f);
  const double beta = a.attrs().get_float("beta", 1.0f);
  const std::vector<double> av = to_doubles(at), bv = to_doubles(bt);
  std::vector<double> y(static_cast<size_t>(m * n), 0.0);
  if (a.has_in(2) && beta != 0.0) {
    const ir::Tensor& ct = a.in(2);
    const std::vector<int64_t> out_dims = {m, n};
    if (ct.rank() > 2) return a.error("C must have rank <= 2");
    for (int i = 0; i < ct.rank(); ++i) {
      const int64_t target = out_dims[static_cast<size_t>(2 - ct.rank() + i)];
      if (ct.dim(i) != 1 && ct.dim(i) != target) return a.error("C does not broadcast to [M, N]");
    }
    const std::vector<double> cv = to_doubles(ct);
    for_each_broadcast(out_dims, {ct.dims()}, [&](int64_t i, const std::vector<int64_t>& off) {
      y[static_cast<size_t>(i)] = beta * cv[static_cast<size_t>(off[0])];
    });
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) acc += av[static_cast<size_t>(ta ? p * m + i : i * k + p)] *
                                             bv[static_cast<size_t>(tb ? j * k + p : p * n + j)];
      y[static_cast<size_t>(i * n + j)] += alpha * acc;
    }
  from_doubles(y, a.out(0));
  return ok_status();
}

// Elements of input `data` minus its zero point `zp`: a scalar, one per row (A: a 1-D tensor of M
// elements) or per column (B: 1-D of N), or an N-D tensor broadcast to the data's shape.
Result<std::vector<int64_t>> centered(const KernelArgs& a, int data, int zp, bool per_row) {
  std::vector<int64_t> v = to_int64s(a.in(data));
  if (!a.has_in(zp)) return v;
  const ir::Tensor& zt = a.in(zp);
  const std::vector<int64_t> z = to_int64s(zt);
  const std::vector<int64_t>& dims = a.in(data).dims();
  const size_t rank = dims.size();
  if (z.size() == 1) {
    for (int64_t& e : v) e -= z[0];
    return v;
  }
  if (per_row && zt.rank() == 1 && rank >= 2 && zt.dim(0) == dims[rank - 2]) {
    const int64_t k = dims[rank - 1], m = dims[rank - 2];
    for (size_t i = 0; i < v.size(); ++i) v[i] -= z[static_cast<size_t>((static_cast<int64_t>(i) / k) % m)];
    return v;
  }
  bool ok = static_cast<size_t>(zt.rank()) <= rank;
  for (int i = 0; ok && i < zt.rank(); ++i) {
    const int64_t target = dims[rank - static_cast<size_t>(zt.rank()) + static_cast<size_t>(i)];
    ok = zt.dim(i) == 1 || zt.dim(i) == target;
  }
  if (!ok) return a.error("zero point of shape " + ir::dims_to_string(zt.dims()) + " does not fit its input");
  for_each_broadcast(dims, {zt.dims()}, [&](int64_t i, const std::vector<int64_t>& off) {
    v[static_cast<size_t>(i)] -= z[static_cast<size_t>(off[0])];
  });
  return v;
}

Status matmul_integer(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::MatMulGeometry g, ops::resolve_matmul(a.in(0).dims(), a.in(1).dims()));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> av, centered(a, 0, 2, true));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> bv, centered(a, 1, 3, false));
  const std::vector<int64_t> y = batched_matmul(g, av, bv);
  int32_t* out = a.out(0).data<int32_t>();
  for (size_t i = 0; i < y.size(); ++i) out[i] = static_cast<int32_t>(y[i]);
  return ok_status();
}

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point. Scales and
// zero points of a may be per row (M elements), those of b per column (N elements).
Status qlinear_matmul(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::MatMulGeometry g, ops::resolve_matmul(a.in(0).dims(), a.in(3).dims()));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> av, centered(a, 0, 2, true));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> bv, centered(a, 3, 5, false));
  const int64_t a_scales = a.in(1).numel(), b_scales = a.in(4).numel();
  if ((a_scales != 1 && a_scales != g.m) || (b_scales != 1 && b_scales != g.n)) {
    return a.error("a_scale must have 1 or M elements and b_scale 1 or N");
  }
  if (a.in(6).numel() != 1 || a.in(7).numel() != 1) return a.error("y_scale and y_zero_point must be scalars");
  const std::vector<int64_t> acc = batched_matmul(g, av, bv);
  const float* as = a.in(1).data<float>();
  const float* bs = a.in(4).data<float>();
  const float ys = a.in(6).data<float>()[0];
  const int64_t y_zp = a.in(7).get_int(0);
  ir::Tensor& out = a.out(0);
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t row = (static_cast<int64_t>(i) / g.n) % g.m, col = static_cast<int64_t>(i) % g.n;
    const float mult = requant_multiplier(as[a_scales == 1 ? 0 : row], bs[b_scales == 1 ? 0 : col], ys);
    if (out.dtype() == ir::DType::kU8) out.data<uint8_t>()[i] = requantize_value<uint8_t>(acc[i], mult, y_zp);
    else out.data<int8_t>()[i] = requantize_value<int8_t>(acc[i], mult, y_zp);
  }
  return ok_status();
}

}  // namespace

void register_matmul_kernels(KernelRegistry& registry) {
  registry.add("MatMul", matmul);
  registry.add("Gemm", gemm);
  registry.add("MatMulInteger", matmul_integer);
  registry.add("QLinearMatMul", qlinear_matmul);
}

}  // namespace nfuse::backends::ref
