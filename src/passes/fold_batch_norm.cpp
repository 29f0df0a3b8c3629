#include "passes/fold_batch_norm.h"

#include <cmath>

#include "ops/fused_epilogue.h"
#include "ops/normalization.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// Per output channel c: BN(y)[c] = s[c] * y[c] + t[c], s = scale / sqrt(var + eps),
// t = bias - mean * s.
struct Affine {
  std::vector<double> s, t;
};

bool is_f32_constant(const ir::Value* v) { return v && v->constant && v->constant->dtype() == ir::DType::kF32; }

// The BN's affine map when it runs in inference mode with constant per-channel parameters of
// `channels` elements and only its output 0 in use.
std::optional<Affine> read_batch_norm(const ir::Node& bn, int64_t channels) {
  if (ops::batch_norm_training(bn)) return std::nullopt;
  for (int i = 1; i < bn.num_outputs(); ++i) {
    const ir::Value* o = bn.output(i);
    if (o && (!o->consumers.empty() || o->is_graph_output)) return std::nullopt;
  }
  std::vector<std::vector<float>> p;  // scale, bias, mean, var
  for (int i = 1; i <= 4; ++i) {
    const ir::Value* v = bn.input(i);
    if (!is_f32_constant(v) || v->constant->numel() != channels) return std::nullopt;
    p.push_back(v->constant->to_float_vector());
  }
  const double eps = bn.attrs.get_float("epsilon", 1e-5f);
  Affine a;
  for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
    const double s = p[0][c] / std::sqrt(static_cast<double>(p[3][c]) + eps);
    a.s.push_back(s);
    a.t.push_back(p[1][c] - p[2][c] * s);
  }
  return a;
}

// Output channel of each weight element's output, by layout: Conv [Cout, Cin/g, k...];
// ConvTranspose [Cin, Cout/g, k...] (input channel ci feeds outputs of group ci / (Cin/g));
// Gemm [K, N] or, with transB, [N, K].
struct WeightLayout {
  int64_t channels = 0;
  std::function<int64_t(int64_t)> channel_of;  // flat weight index -> output channel
};

std::optional<WeightLayout> weight_layout(const ir::Node& p, const ir::Tensor& w) {
  const std::vector<int64_t>& d = w.dims();
  if (p.op_type == "Conv" && w.rank() >= 3) {
    const int64_t per = w.numel() / std::max<int64_t>(d[0], 1);
    return WeightLayout{d[0], [per](int64_t i) { return i / per; }};
  }
  if (p.op_type == "ConvTranspose" && w.rank() >= 3) {
    const int64_t g = p.attrs.get_int("group", 1);
    if (g < 1 || d[0] % g != 0) return std::nullopt;
    const int64_t cout_g = d[1], cin_g = d[0] / g;
    const int64_t taps = w.numel() / std::max<int64_t>(d[0] * d[1], 1);
    return WeightLayout{cout_g * g, [=](int64_t i) {
                          const int64_t ci = i / (cout_g * taps), j = (i / taps) % cout_g;
                          return (ci / cin_g) * cout_g + j;
                        }};
  }
  if (p.op_type == "Gemm" && w.rank() == 2) {
    if (p.attrs.get_int("transB", 0) != 0) return WeightLayout{d[0], [k = d[1]](int64_t i) { return i / k; }};
    return WeightLayout{d[1], [n = d[1]](int64_t i) { return i % n; }};
  }
  return std::nullopt;
}

// Gemm's C' = C * s + t / beta over C's rows (C is scalar, [N], [1|M, 1|N]); beta becomes 1
// when C was absent or beta 0.
std::optional<ir::Tensor> folded_gemm_bias(ir::Node& gemm, const Affine& a) {
  const int64_t n = static_cast<int64_t>(a.s.size());
  const ir::Value* c = gemm.input(2);
  float beta = gemm.attrs.get_float("beta", 1.0f);
  if (!c || beta == 0.0f) {
    gemm.attrs.set("beta", 1.0f);
    std::vector<float> t(a.t.begin(), a.t.end());
    return ir::Tensor::from_vector(t, {n});
  }
  if (!is_f32_constant(c) || c->constant->rank() > 2) return std::nullopt;
  const ir::Tensor& ct = *c->constant;
  const int64_t rows = ct.rank() == 2 ? ct.dim(0) : 1;
  const int64_t cols = ct.rank() >= 1 ? ct.dim(ct.rank() - 1) : 1;
  if (cols != 1 && cols != n) return std::nullopt;
  ir::Tensor out = ir::Tensor::allocate(ir::DType::kF32, ct.rank() == 2 ? std::vector<int64_t>{rows, n}
                                                                        : std::vector<int64_t>{n});
  const float* in = ct.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const double v = in[r * cols + (cols == 1 ? 0 : j)];
      o[r * n + j] = static_cast<float>(v * a.s[static_cast<size_t>(j)] + a.t[static_cast<size_t>(j)] / beta);
    }
  return out;
}

// Pattern: P(x, W[, b]) -> y -> BatchNormalization(y, scale, bias, mean, var) -> z
//          (P = Conv | ConvTranspose | Gemm, y used only by the BN)
//     ->   P(x, W * s, b * s + t) -> z
Result<bool> try_fold(ir::Graph& graph, ir::Node& bn) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty()) return false;
  ir::Value* y = bn.input(0);
  ir::Node* p = producer_of(y);
  if (!p || (p->op_type != "Conv" && p->op_type != "ConvTranspose" && p->op_type != "Gemm")) return false;
  if (sole_consumer(y) != &bn || ops::has_fused_epilogue(*p) || !is_f32_constant(p->input(1))) return false;
  const ir::Tensor& w = *p->input(1)->constant;
  auto layout = weight_layout(*p, w);
  if (!layout) return false;
  auto affine = read_batch_norm(bn, layout->channels);
  if (!affine) return false;
  std::optional<ir::Tensor> bias;
  if (p->op_type == "Gemm") {
    bias = folded_gemm_bias(*p, *affine);
    if (!bias) return false;
  } else {
    const ir::Value* b = p->input(2);
    if (b && (!is_f32_constant(b) || b->constant->numel() != layout->channels)) return false;
    std::vector<float> nb(static_cast<size_t>(layout->channels));
    for (size_t c = 0; c < nb.size(); ++c) {
      const double b0 = b ? b->constant->data<float>()[c] : 0.0;
      nb[c] = static_cast<float>(b0 * affine->s[c] + affine->t[c]);
    }
    bias = ir::Tensor::from_vector(nb, {layout->channels});
  }
  ir::Tensor nw = ir::Tensor::allocate(ir::DType::kF32, w.dims());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double s = affine->s[static_cast<size_t>(layout->channel_of(i))];
    nw.data<float>()[i] = static_cast<float>(w.data<float>()[i] * s);
  }
  set_constant_input(graph, *p, 1, p->input(1)->name + "_bn", std::move(nw));
  set_constant_input(graph, *p, 2, (p->input(2) ? p->input(2)->name : p->name + "_bias") + "_bn",
                     std::move(*bias));
  p->outputs[0] = bn.output(0);
  graph.remove_node(&bn);
  return true;
}

}  // namespace

Status fold_batch_norm(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) -> Result<bool> {
    const std::string bn = n.label();
    ir::Node* p = producer_of(n.input(0));
    const std::string target = p ? p->label() : "";
    NFUSE_ASSIGN_OR_RETURN(bool folded, try_fold(graph, n));
    if (folded) log.add("folded " + bn + " into " + target);
    return folded;
  });
  return r.status();
}

}  // namespace nfuse::passes
