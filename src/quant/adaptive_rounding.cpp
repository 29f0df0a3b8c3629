#include "quant/adaptive_rounding.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace nfuse::quant {
namespace {

constexpr double kDamping = 0.01;  // of H's mean diagonal

// Lower Cholesky factor of the symmetric positive definite n x n matrix `a` (full storage),
// in place (the upper triangle is zeroed). False when `a` is not positive definite.
bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t t = 0; t < j; ++t) d -= a[j * n + t] * a[j * n + t];
    if (!(d > 0.0) || !std::isfinite(d)) return false;
    const double l = std::sqrt(d);
    a[j * n + j] = l;
    for (int64_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (int64_t t = 0; t < j; ++t) v -= a[i * n + t] * a[j * n + t];
      a[i * n + j] = v / l;
    }
    for (int64_t i = 0; i < j; ++i) a[i * n + j] = 0.0;
  }
  return true;
}

// U, upper triangular, with U^T U = H^-1 (what the column-by-column update reads). False when
// H or its inverse cannot be factored.
bool inverse_upper_factor(std::vector<double> h, int64_t n, std::vector<double>* u) {
  if (!cholesky_lower(h, n)) return false;
  // Linv = L^-1 (lower), by forward substitution on each column of the identity.
  std::vector<double> linv(static_cast<size_t>(n * n), 0.0);
  for (int64_t c = 0; c < n; ++c) {
    linv[c * n + c] = 1.0 / h[c * n + c];
    for (int64_t i = c + 1; i < n; ++i) {
      double v = 0.0;
      for (int64_t t = c; t < i; ++t) v -= h[i * n + t] * linv[t * n + c];
      linv[i * n + c] = v / h[i * n + i];
    }
  }
  // H^-1 = Linv^T Linv.
  std::vector<double> inv(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      double v = 0.0;
      for (int64_t t = j; t < n; ++t) v += linv[t * n + i] * linv[t * n + j];
      inv[i * n + j] = inv[j * n + i] = v;
    }
  }
  if (!cholesky_lower(inv, n)) return false;
  u->assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) (*u)[i * n + j] = inv[j * n + i];
  return true;
}

// A weight with the earlier columns' error folded in, on the symmetric int8 grid of the weights.
int8_t round_compensated(double w, double s) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(w / s), -127.0, 127.0));
}

// Adds x x^T (upper triangle) to the k x k matrix h.
void rank1_upper(const double* x, int64_t k, double* h) {
  for (int64_t i = 0; i < k; ++i) {
    const double xi = x[i];
    if (xi == 0.0) continue;
    double* row = h + i * k;
    for (int64_t j = i; j < k; ++j) row[j] += xi * x[j];
  }
}

std::vector<int64_t> ints_or(const ir::Node& n, const char* name, size_t count, int64_t def) {
  std::vector<int64_t> v = n.attrs.get_ints(name, {});
  return v.empty() ? std::vector<int64_t>(count, def) : v;
}

}  // namespace

Result<GramGeometry> gram_geometry(const ir::Node& n) {
  GramGeometry g;
  const ir::Value* w = n.input(1);
  if (!w || !w->constant || w->constant->dtype() != ir::DType::kF32) {
    return unsupported(n.label() + ": no constant f32 weight");
  }
  const ir::Tensor& t = *w->constant;
  if (n.op_type == "Conv") {
    if (t.rank() != 3 && t.rank() != 4) return unsupported(n.label() + ": only 1-D and 2-D convolutions");
    const std::string auto_pad = n.attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET") return unsupported(n.label() + ": auto_pad " + auto_pad);
    const bool two_d = t.rank() == 4;
    const size_t sd = two_d ? 2 : 1;
    const auto strides = ints_or(n, "strides", sd, 1), dil = ints_or(n, "dilations", sd, 1);
    const auto pads = ints_or(n, "pads", 2 * sd, 0);
    if (strides.size() != sd || dil.size() != sd || pads.size() != 2 * sd) {
      return invalid_argument(n.label() + ": strides, dilations or pads of the wrong length");
    }
    g.conv = true;
    g.groups = n.attrs.get_int("group", 1);
    g.cin_g = t.dim(1);
    g.kh = two_d ? t.dim(2) : 1;
    g.kw = t.dim(t.rank() - 1);
    g.stride_h = two_d ? strides[0] : 1;
    g.stride_w = strides[sd - 1];
    g.dil_h = two_d ? dil[0] : 1;
    g.dil_w = dil[sd - 1];
    g.pad_t = two_d ? pads[0] : 0;
    g.pad_l = pads[sd - 1];
    g.pad_b = two_d ? pads[2] : 0;
    g.pad_r = pads[2 * sd - 1];
    g.k = g.cin_g * g.kh * g.kw;
    if (g.groups < 1 || t.dim(0) % g.groups != 0) return invalid_argument(n.label() + ": bad group count");
    return g;
  }
  if ((n.op_type == "Gemm" && n.attrs.get_int("transA", 0) == 0) || n.op_type == "MatMul") {
    if (t.rank() != 2) return unsupported(n.label() + ": weight of rank " + std::to_string(t.rank()));
    g.k = n.op_type == "Gemm" && n.attrs.get_int("transB", 0) ? t.dim(1) : t.dim(0);
    return g;
  }
  return unsupported(n.label() + ": adaptive rounding covers Conv, Gemm and MatMul");
}

Status accumulate_gram(const ir::Tensor& x, LayerGram* gram) {
  const GramGeometry& g = gram->geometry;
  if (x.dtype() != ir::DType::kF32) return invalid_argument("adaptive rounding: the layer input is not f32");
  const int64_t k = g.k;
  if (gram->h.empty()) gram->h.assign(static_cast<size_t>(g.groups * k * k), 0.0);
  const float* src = x.data<float>();
  std::vector<double> patch(static_cast<size_t>(k));
  int64_t positions = 0, n = 0, c = 0, ih = 1, iw = 0, oh = 1, ow = 0;
  if (g.conv) {
    if (x.rank() != 3 && x.rank() != 4)
      return invalid_argument("adaptive rounding: conv input of rank " + std::to_string(x.rank()));
    n = x.dim(0);
    c = x.dim(1);
    ih = x.rank() == 4 ? x.dim(2) : 1;
    iw = x.dim(x.rank() - 1);
    if (c != g.cin_g * g.groups)
      return invalid_argument("adaptive rounding: conv input channels do not match the weight");
    oh = (ih + g.pad_t + g.pad_b - g.dil_h * (g.kh - 1) - 1) / g.stride_h + 1;
    ow = (iw + g.pad_l + g.pad_r - g.dil_w * (g.kw - 1) - 1) / g.stride_w + 1;
    if (oh < 1 || ow < 1) return ok_status();
    positions = n * oh * ow;
  } else {
    if (x.rank() < 1 || x.dim(x.rank() - 1) != k)
      return invalid_argument("adaptive rounding: input rows do not match the weight");
    positions = k ? x.numel() / k : 0;
  }
  if (positions == 0) return ok_status();
  const int64_t macs_per_position = std::max<int64_t>(1, g.groups * k * (k + 1) / 2);
  const int64_t cap =
      std::clamp(kGramMacsPerBatch / macs_per_position, kGramMinPositionsPerBatch, kGramPositionsPerBatch);
  const int64_t step = (positions + cap - 1) / cap;
  const int64_t offset = (gram->batches * 7919) % step;
  int64_t taken = 0;
  for (int64_t p = offset; p < positions; p += step, ++taken) {
    if (!g.conv) {
      const float* row = src + p * k;
      for (int64_t i = 0; i < k; ++i) patch[static_cast<size_t>(i)] = row[i];
      rank1_upper(patch.data(), k, gram->h.data());
      continue;
    }
    const int64_t b = p / (oh * ow), oy = p / ow % oh, ox = p % ow;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      size_t idx = 0;
      for (int64_t ci = 0; ci < g.cin_g; ++ci) {
        const float* plane = src + ((b * c) + grp * g.cin_g + ci) * ih * iw;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const int64_t y = oy * g.stride_h - g.pad_t + ky * g.dil_h;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t xx = ox * g.stride_w - g.pad_l + kx * g.dil_w;
            patch[idx++] = (y >= 0 && y < ih && xx >= 0 && xx < iw) ? plane[y * iw + xx] : 0.0;
          }
        }
      }
      rank1_upper(patch.data(), k, gram->h.data() + grp * k * k);
    }
  }
  gram->samples += taken;
  ++gram->batches;
  return ok_status();
}

Result<int64_t> adaptive_round(const ir::Tensor& w, int axis, std::span<const float> scale, const LayerGram& gram,
                               ir::Tensor* values) {
  const GramGeometry& geo = gram.geometry;
  const int64_t k = geo.k;
  if (w.dtype() != ir::DType::kF32 || w.rank() < 2)
    return invalid_argument("adaptive rounding: f32 weight of rank >= 2 expected");
  if (!values || values->dtype() != ir::DType::kI8 || values->dims() != w.dims())
    return invalid_argument("adaptive rounding: the nearest-rounded s8 values of the weight expected");
  if (axis < 0) axis += w.rank();
  if (axis != 0 && !(axis == 1 && w.rank() == 2))
    return unsupported("adaptive rounding: weight axis " + std::to_string(axis));
  const int64_t channels = w.dim(axis);
  if (channels * k != w.numel() || static_cast<int64_t>(scale.size()) != channels || channels % geo.groups != 0) {
    return invalid_argument("adaptive rounding: weight, scales and input geometry do not match");
  }
  if (gram.samples == 0 || k > kAdaptiveRoundingMaxK || k < 2) return int64_t{0};
  // Element (o, i) of the weight viewed as channels x k.
  auto at = [&](int64_t o, int64_t i) { return axis == 0 ? o * k + i : i * channels + o; };
  const float* src = w.data<float>();
  int8_t* dst = values->data<int8_t>();
  int64_t adapted = 0;
  const int64_t per_group = channels / geo.groups;
  for (int64_t grp = 0; grp < geo.groups; ++grp) {
    const double* hu = gram.h.data() + grp * k * k;
    std::vector<double> diag(static_cast<size_t>(k));
    double mean_diag = 0.0;
    for (int64_t i = 0; i < k; ++i) mean_diag += diag[static_cast<size_t>(i)] = hu[i * k + i];
    mean_diag /= static_cast<double>(k);
    if (!(mean_diag > 0.0)) continue;  // the group's input was all zero: nothing to weigh by
    std::vector<int64_t> perm(static_cast<size_t>(k));
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return diag[static_cast<size_t>(a)] > diag[static_cast<size_t>(b)]; });
    // H in the permuted order, normalised by its mean diagonal (scale-free), damped; inputs that
    // were always zero get a unit diagonal (their weights then round to nearest).
    std::vector<double> h(static_cast<size_t>(k * k));
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t a = std::min(perm[i], perm[j]), b = std::max(perm[i], perm[j]);
        h[i * k + j] = hu[a * k + b] / mean_diag;
      }
      if (h[i * k + i] <= 0.0) h[i * k + i] = 1.0;
      h[i * k + i] += kDamping;
    }
    std::vector<double> u;
    if (!inverse_upper_factor(std::move(h), k, &u)) continue;  // keeps nearest rounding
    std::vector<double> row(static_cast<size_t>(k));
    for (int64_t o = grp * per_group; o < (grp + 1) * per_group; ++o) {
      const double s = scale[static_cast<size_t>(o)];
      for (int64_t i = 0; i < k; ++i) row[static_cast<size_t>(i)] = src[at(o, perm[i])];
      for (int64_t i = 0; i < k; ++i) {
        const int8_t v = round_compensated(row[static_cast<size_t>(i)], s);
        dst[at(o, perm[i])] = v;
        const double err = (row[static_cast<size_t>(i)] - v * s) / u[i * k + i];
        const double* ui = u.data() + i * k;
        for (int64_t j = i + 1; j < k; ++j) row[static_cast<size_t>(j)] -= err * ui[j];
      }
    }
    ++adapted;
  }
  return adapted;
}

}  // namespace nfuse::quant
