// Reference RNN, GRU and LSTM. Everything is read into doubles, computed in double and stored
// back in the input dtype: slow and plain, the oracle for optimized kernels.
// Gate order in W/R/B: RNN i; GRU z r h; LSTM i o f c (peepholes P: i o f).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

struct Activation {
  std::string name;  // lower case
  double alpha = 0.0;
  double beta = 0.0;

  double operator()(double x) const {
    if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "tanh") return std::tanh(x);
    if (name == "relu") return std::max(0.0, x);
    if (name == "affine") return alpha * x + beta;
    if (name == "leakyrelu") return x >= 0 ? x : alpha * x;
    if (name == "thresholdedrelu") return x > alpha ? x : 0.0;
    if (name == "scaledtanh") return alpha * std::tanh(beta * x);
    if (name == "hardsigmoid") return std::min(1.0, std::max(0.0, alpha * x + beta));
    if (name == "elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    if (name == "softsign") return x / (1.0 + std::fabs(x));
    return std::log1p(std::exp(x));  // softplus (verify rejected every other name)
  }
};

// Builds the activations of every direction. alpha/beta are consumed in list order by the
// functions that take them (as onnxruntime does); a missing one takes the op's usual default.
Result<std::vector<Activation>> parse_activations(const KernelArgs& a, const std::vector<std::string>& defaults,
                                                  int dirs) {
  std::vector<std::string> names = a.attrs().get_strings("activations");
  if (names.empty()) names = defaults;
  const std::vector<float> alphas = a.attrs().get_floats("activation_alpha");
  const std::vector<float> betas = a.attrs().get_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> acts;
  for (std::string n : names) {
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
    Activation act{n};
    double alpha_def = 0.0, beta_def = 0.0;
    bool uses_alpha = true, uses_beta = false;
    if (n == "affine") alpha_def = 1.0, uses_beta = true;
    else if (n == "leakyrelu") alpha_def = 0.01;
    else if (n == "thresholdedrelu" || n == "elu") alpha_def = 1.0;
    else if (n == "scaledtanh") alpha_def = 1.0, beta_def = 1.0, uses_beta = true;
    else if (n == "hardsigmoid") alpha_def = 0.2, beta_def = 0.5, uses_beta = true;
    else if (n == "sigmoid" || n == "tanh" || n == "relu" || n == "softsign" || n == "softplus") uses_alpha = false;
    else return a.error("unknown activation '" + n + "'");
    act.alpha = alpha_def;
    act.beta = beta_def;
    if (uses_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (uses_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    acts.push_back(act);
  }
  const size_t per = defaults.size();
  if (acts.size() == per && dirs == 2) {
    const std::vector<Activation> first = acts;  // inserting a range of itself would be undefined
    acts.insert(acts.end(), first.begin(), first.end());
  }
  if (acts.size() != per * static_cast<size_t>(dirs)) return a.error("wrong number of activations");
  return acts;
}

std::vector<double> to_doubles(const ir::Tensor* t) {
  std::vector<double> v;
  if (!t) return v;
  v.resize(static_cast<size_t>(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i) v[static_cast<size_t>(i)] = t->get_double(i);
  return v;
}

struct Problem {
  int gates = 1;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batch_major = false;
  bool reverse_only = false;
  double clip = std::numeric_limits<double>::infinity();
  std::vector<double> x, w, r, b, h0, c0, p;
  std::vector<int64_t> lens;
  std::vector<Activation> acts;  // per direction, acts_per_dir each

  const double* x_at(int64_t t, int64_t bi) const {
    return &x[static_cast<size_t>((batch_major ? bi * seq + t : t * batch + bi) * input)];
  }
  size_t state_index(int64_t d, int64_t bi) const {
    return static_cast<size_t>((batch_major ? bi * dirs + d : d * batch + bi) * hidden);
  }
  size_t y_index(int64_t t, int64_t d, int64_t bi) const {
    return static_cast<size_t>((batch_major ? (bi * seq + t) * dirs + d : (t * dirs + d) * batch + bi) * hidden);
  }
  double clipped(double v) const { return std::clamp(v, -clip, clip); }
};

bool dims_are(const ir::Tensor* t, std::vector<int64_t> want) { return !t || t->dims() == want; }

// Reads inputs and checks every dim: kernels trust nothing they index with.
Status load_problem(const KernelArgs& a, int gates, Problem* p) {
  const ir::Tensor& x = a.in(0);
  if (x.rank() != 3 || a.in(1).rank() != 3 || a.in(2).rank() != 3) return a.error("X, W and R must have rank 3");
  p->gates = gates;
  p->batch_major = a.attrs().get_int("layout", 0) == 1;
  p->seq = x.dim(p->batch_major ? 1 : 0);
  p->batch = x.dim(p->batch_major ? 0 : 1);
  p->input = x.dim(2);
  p->hidden = a.attrs().get_int("hidden_size", a.in(2).dim(2));
  const std::string dir = a.attrs().get_string("direction", "forward");
  p->dirs = dir == "bidirectional" ? 2 : 1;
  p->reverse_only = dir == "reverse";
  if (a.attrs().has("clip")) p->clip = a.attrs().get_float("clip", 0.0f);
  const int64_t gh = gates * p->hidden, d = p->dirs, bt = p->batch, h = p->hidden;
  const std::vector<int64_t> state = p->batch_major ? std::vector<int64_t>{bt, d, h} : std::vector<int64_t>{d, bt, h};
  const ir::Tensor* opt[8] = {};
  for (int i = 3; i < 8; ++i) opt[i] = a.has_in(i) ? &a.in(i) : nullptr;
  if (!dims_are(&a.in(1), {d, gh, p->input}) || !dims_are(&a.in(2), {d, gh, h}) ||
      !dims_are(opt[3], {d, 2 * gh}) || !dims_are(opt[4], {bt}) || !dims_are(opt[5], state) ||
      !dims_are(opt[6], state) || !dims_are(opt[7], {d, 3 * h})) {
    return a.error("input shapes are inconsistent with X " + ir::dims_to_string(x.dims()) + " and hidden_size " +
                   std::to_string(h));
  }
  p->x = to_doubles(&x);
  p->w = to_doubles(&a.in(1));
  p->r = to_doubles(&a.in(2));
  p->b = opt[3] ? to_doubles(opt[3]) : std::vector<double>(static_cast<size_t>(d * 2 * gh), 0.0);
  p->h0 = opt[5] ? to_doubles(opt[5]) : std::vector<double>(static_cast<size_t>(d * bt * h), 0.0);
  p->c0 = opt[6] ? to_doubles(opt[6]) : std::vector<double>(static_cast<size_t>(d * bt * h), 0.0);
  p->p = opt[7] ? to_doubles(opt[7]) : std::vector<double>(static_cast<size_t>(d * 3 * h), 0.0);
  p->lens.assign(static_cast<size_t>(bt), p->seq);
  if (opt[4]) {
    for (int64_t i = 0; i < bt; ++i) {
      const int64_t len = opt[4]->get_int(i);
      if (len < 0 || len > p->seq) {
        return a.error("sequence_lens[" + std::to_string(i) + "] = " + std::to_string(len) + " is outside [0, " +
                       std::to_string(p->seq) + "]");
      }
      p->lens[static_cast<size_t>(i)] = len;
    }
  }
  return ok_status();
}

// out[j] = bias[j] + sum_k v[k] * m[j][k] for j < rows (m row-major, `cols` wide).
void matvec(const double* m, int64_t rows, int64_t cols, const double* v, const double* bias, double* out) {
  for (int64_t j = 0; j < rows; ++j) {
    double acc = bias[j];
    for (int64_t k = 0; k < cols; ++k) acc += v[k] * m[j * cols + k];
    out[j] = acc;
  }
}

// One time step of direction d. h (and c for LSTM) are updated in place.
using StepFn = void (*)(const Problem& p, const KernelArgs& a, int64_t d, const double* xt, std::vector<double>& h,
                        std::vector<double>& c);

struct Projection {
  std::vector<double> xw, hr;  // X*W^T + Wb and H*R^T + Rb, gates*hidden each
};

Projection project(const Problem& p, int64_t d, const double* xt, const double* h) {
  const int64_t gh = p.gates * p.hidden;
  Projection pr{std::vector<double>(static_cast<size_t>(gh)), std::vector<double>(static_cast<size_t>(gh))};
  const double* w = &p.w[static_cast<size_t>(d * gh * p.input)];
  const double* r = &p.r[static_cast<size_t>(d * gh * p.hidden)];
  const double* wb = &p.b[static_cast<size_t>(d * 2 * gh)];
  matvec(w, gh, p.input, xt, wb, pr.xw.data());
  matvec(r, gh, p.hidden, h, wb + gh, pr.hr.data());
  return pr;
}

void rnn_step(const Problem& p, const KernelArgs&, int64_t d, const double* xt, std::vector<double>& h,
              std::vector<double>&) {
  const Projection pr = project(p, d, xt, h.data());
  const Activation& f = p.acts[static_cast<size_t>(d)];
  for (size_t j = 0; j < h.size(); ++j) h[j] = f(p.clipped(pr.xw[j] + pr.hr[j]));
}

void gru_step(const Problem& p, const KernelArgs& a, int64_t d, const double* xt, std::vector<double>& h,
              std::vector<double>&) {
  const size_t hs = static_cast<size_t>(p.hidden);
  const Projection pr = project(p, d, xt, h.data());
  const Activation& f = p.acts[static_cast<size_t>(d * 2)];
  const Activation& g = p.acts[static_cast<size_t>(d * 2 + 1)];
  std::vector<double> z(hs), r(hs), rh(hs), hh(hs);
  for (size_t j = 0; j < hs; ++j) {
    z[j] = f(p.clipped(pr.xw[j] + pr.hr[j]));
    r[j] = f(p.clipped(pr.xw[hs + j] + pr.hr[hs + j]));
    rh[j] = r[j] * h[j];
  }
  if (a.attrs().get_int("linear_before_reset", 0) != 0) {
    for (size_t j = 0; j < hs; ++j) hh[j] = g(p.clipped(pr.xw[2 * hs + j] + r[j] * pr.hr[2 * hs + j]));
  } else {
    // (r . H) * Rh^T + Rbh: the reset gate applies before the recurrence weights.
    const int64_t gh = 3 * p.hidden;
    const double* rh_w = &p.r[static_cast<size_t>(d * gh * p.hidden + 2 * p.hidden * p.hidden)];
    const double* rbh = &p.b[static_cast<size_t>(d * 2 * gh + gh + 2 * p.hidden)];
    std::vector<double> rec(hs);
    matvec(rh_w, p.hidden, p.hidden, rh.data(), rbh, rec.data());
    for (size_t j = 0; j < hs; ++j) hh[j] = g(p.clipped(pr.xw[2 * hs + j] + rec[j]));
  }
  for (size_t j = 0; j < hs; ++j) h[j] = (1.0 - z[j]) * hh[j] + z[j] * h[j];
}

void lstm_step(const Problem& p, const KernelArgs& a, int64_t d, const double* xt, std::vector<double>& h,
               std::vector<double>& c) {
  const size_t hs = static_cast<size_t>(p.hidden);
  const Projection pr = project(p, d, xt, h.data());
  const Activation& f = p.acts[static_cast<size_t>(d * 3)];
  const Activation& g = p.acts[static_cast<size_t>(d * 3 + 1)];
  const Activation& hact = p.acts[static_cast<size_t>(d * 3 + 2)];
  const double* pi = &p.p[static_cast<size_t>(d * 3) * hs];
  const double* po = pi + hs;
  const double* pf = po + hs;
  const bool input_forget = a.attrs().get_int("input_forget", 0) != 0;
  for (size_t j = 0; j < hs; ++j) {
    const double ig = f(p.clipped(pr.xw[j] + pr.hr[j] + pi[j] * c[j]));
    const double fg = input_forget ? 1.0 - ig : f(p.clipped(pr.xw[2 * hs + j] + pr.hr[2 * hs + j] + pf[j] * c[j]));
    const double cg = g(p.clipped(pr.xw[3 * hs + j] + pr.hr[3 * hs + j]));
    const double c_new = fg * c[j] + ig * cg;
    const double og = f(p.clipped(pr.xw[hs + j] + pr.hr[hs + j] + po[j] * c_new));
    c[j] = c_new;
    h[j] = og * hact(c_new);
  }
}

Status run_recurrence(KernelArgs& a, int gates, const std::vector<std::string>& default_acts, StepFn step) {
  Problem p;
  NFUSE_RETURN_IF_ERROR_PLAIN(load_problem(a, gates, &p));
  NFUSE_ASSIGN_OR_RETURN(p.acts, parse_activations(a, default_acts, static_cast<int>(p.dirs)));
  ir::Tensor* y = a.num_outputs() > 0 && !a.out(0).empty() ? &a.out(0) : nullptr;
  ir::Tensor* y_h = a.num_outputs() > 1 && !a.out(1).empty() ? &a.out(1) : nullptr;
  ir::Tensor* y_c = a.num_outputs() > 2 && !a.out(2).empty() ? &a.out(2) : nullptr;
  const int64_t sq = p.seq, d = p.dirs, bt = p.batch, hd = p.hidden;
  const std::vector<int64_t> y_dims = p.batch_major ? std::vector<int64_t>{bt, sq, d, hd} : std::vector<int64_t>{sq, d, bt, hd};
  const std::vector<int64_t> s_dims = p.batch_major ? std::vector<int64_t>{bt, d, hd} : std::vector<int64_t>{d, bt, hd};
  if ((y && y->dims() != y_dims) || (y_h && y_h->dims() != s_dims) || (y_c && y_c->dims() != s_dims)) {
    return a.error("outputs were not sized as inference says");
  }
  // Steps past a batch entry's sequence length leave Y at zero; the buffer may be reused memory.
  if (y) std::fill_n(static_cast<char*>(y->raw()), y->bytes(), 0);
  const size_t hs = static_cast<size_t>(p.hidden);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const bool backward = p.reverse_only || d == 1;
    for (int64_t bi = 0; bi < p.batch; ++bi) {
      const size_t si = p.state_index(d, bi);
      std::vector<double> h(p.h0.begin() + static_cast<long>(si), p.h0.begin() + static_cast<long>(si + hs));
      std::vector<double> c(p.c0.begin() + static_cast<long>(si), p.c0.begin() + static_cast<long>(si + hs));
      const int64_t len = p.lens[static_cast<size_t>(bi)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = backward ? len - 1 - s : s;
        step(p, a, d, p.x_at(t, bi), h, c);
        if (y) {
          const size_t yi = p.y_index(t, d, bi);
          for (size_t j = 0; j < hs; ++j) ir::store_from_double(y->dtype(), y->raw(), static_cast<int64_t>(yi + j), h[j]);
        }
      }
      for (size_t j = 0; j < hs; ++j) {
        if (y_h) ir::store_from_double(y_h->dtype(), y_h->raw(), static_cast<int64_t>(si + j), h[j]);
        if (y_c) ir::store_from_double(y_c->dtype(), y_c->raw(), static_cast<int64_t>(si + j), c[j]);
      }
    }
  }
  return ok_status();
}

Status rnn(KernelArgs& a) { return run_recurrence(a, 1, {"tanh"}, rnn_step); }
Status gru(KernelArgs& a) { return run_recurrence(a, 3, {"sigmoid", "tanh"}, gru_step); }
Status lstm(KernelArgs& a) { return run_recurrence(a, 4, {"sigmoid", "tanh", "tanh"}, lstm_step); }

}  // namespace

void register_rnn_kernels(KernelRegistry& registry) {
  registry.add("RNN", rnn);
  registry.add("GRU", gru);
  registry.add("LSTM", lstm);
}

}  // namespace nfuse::backends::ref
