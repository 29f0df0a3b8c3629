#include "quant/threshold_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace nfuse::quant {
namespace {

double absmax_of(const HistogramView& h) {
  return std::max(std::fabs(static_cast<double>(h.min)), std::fabs(static_cast<double>(h.max)));
}

double bin_width(const HistogramView& h) { return 2.0 * h.limit / static_cast<double>(h.bins.size()); }

// Bins up to absmax: candidate windows 1 .. this.
size_t candidate_count(const HistogramView& h) {
  const size_t half = h.bins.size() / 2;
  double k = std::ceil(absmax_of(h) / bin_width(h));
  return std::clamp<size_t>(static_cast<size_t>(k), 1, half);
}

double threshold_of(const HistogramView& h, size_t i) {
  return std::min(static_cast<double>(i) * bin_width(h), absmax_of(h));
}

double step_of(Range r, int bits, bool symmetric) {
  if (symmetric) {
    double a = std::max(std::fabs(static_cast<double>(r.min)), std::fabs(static_cast<double>(r.max)));
    return a / static_cast<double>((int64_t{1} << (bits - 1)) - 1);
  }
  return (static_cast<double>(r.max) - static_cast<double>(r.min)) / static_cast<double>((int64_t{1} << bits) - 1);
}

struct Mass {
  double centre;
  double count;
};

// Non-empty bins as (centre clamped to [min, max], count).
std::vector<Mass> masses(const HistogramView& h) {
  std::vector<Mass> out;
  const double w = bin_width(h);
  for (size_t j = 0; j < h.bins.size(); ++j) {
    if (h.bins[j] == 0) continue;
    double c = -h.limit + (static_cast<double>(j) + 0.5) * w;
    c = std::clamp(c, static_cast<double>(h.min), static_cast<double>(h.max));
    out.push_back({c, static_cast<double>(h.bins[j])});
  }
  return out;
}

NoiseEstimate noise_of(const std::vector<Mass>& m, Range r, int bits, bool symmetric) {
  const double step = step_of(r, bits, symmetric);
  const double lo = r.min, hi = r.max;
  NoiseEstimate e;
  double inside = 0.0;
  for (const Mass& b : m) {
    if (b.centre < lo) {
      e.clipping += b.count * (lo - b.centre) * (lo - b.centre);
    } else if (b.centre > hi) {
      e.clipping += b.count * (b.centre - hi) * (b.centre - hi);
    } else {
      inside += b.count;
    }
  }
  e.rounding = inside * step * step / 12.0;
  return e;
}

// ORT's / MXNet's smooth_distribution on counts: empty bins get kSmoothEps, taken evenly from
// the non-empty ones. False when that empties a bin (or all bins are empty): the KL is infinite.
constexpr double kSmoothEps = 1e-4;
bool smooth(std::vector<double>& counts) {
  size_t zeros = 0;
  for (double c : counts) zeros += c == 0.0;
  if (zeros == counts.size()) return false;
  const double take = kSmoothEps * static_cast<double>(zeros) / static_cast<double>(counts.size() - zeros);
  for (double& c : counts) {
    if (c == 0.0) {
      c = kSmoothEps;
    } else {
      c -= take;
      if (c <= 0.0) return false;
    }
  }
  return true;
}

}  // namespace

Range range_for_threshold(const HistogramView& h, double t, bool symmetric) {
  if (symmetric) return {static_cast<float>(-t), static_cast<float>(t)};
  double lo = std::min(0.0, std::max(static_cast<double>(h.min), -t));
  double hi = std::max(0.0, std::min(static_cast<double>(h.max), t));
  return {static_cast<float>(lo), static_cast<float>(hi)};
}

NoiseEstimate estimate_noise(const HistogramView& h, Range r, int bits, bool symmetric) {
  return noise_of(masses(h), r, bits, symmetric);
}

double search_noise_threshold(const HistogramView& h, int bits, bool symmetric, double clip_weight) {
  const std::vector<Mass> m = masses(h);
  const size_t k = candidate_count(h);
  double best_t = absmax_of(h);
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i <= k; ++i) {
    const double t = threshold_of(h, i);
    NoiseEstimate e = noise_of(m, range_for_threshold(h, t, symmetric), bits, symmetric);
    const double cost = e.rounding + clip_weight * e.clipping;
    if (cost <= best) {  // ties: the larger threshold
      best = cost;
      best_t = t;
    }
  }
  return best_t;
}

double search_entropy_threshold(const HistogramView& h, int bits, bool symmetric) {
  const size_t half = h.bins.size() / 2;
  std::vector<double> f(half);  // histogram of |x|, zeros left out
  for (size_t j = 0; j < half; ++j) {
    f[j] = static_cast<double>(h.bins[half + j]) + static_cast<double>(h.bins[half - 1 - j]);
  }
  const size_t k = candidate_count(h);
  std::vector<double> suffix(half + 1, 0.0);  // suffix[i] = sum f[i..]
  for (size_t j = half; j-- > 0;) suffix[j] = suffix[j + 1] + f[j];
  const double total = suffix[0];
  const double absmax = absmax_of(h);

  auto levels = [&](double t) -> size_t {
    if (symmetric) return size_t{1} << (bits - 1);
    Range r = range_for_threshold(h, t, false);
    double width = static_cast<double>(r.max) - static_cast<double>(r.min);
    double l = std::round(static_cast<double>((int64_t{1} << bits) - 1) * t / width);
    return static_cast<size_t>(std::max(1.0, l));
  };

  double best_t = absmax;
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> group_sum, group_nonzero, p_buf, q_buf;
  for (size_t i = 1; i <= k; ++i) {
    const double t = threshold_of(h, i);
    const size_t l = levels(t);
    if (i < l && i != k) continue;  // windows finer than the quantization grid say nothing
    const double outliers = suffix[i];
    const double inside = total - outliers;
    if (inside <= 0.0) continue;
    const size_t groups = std::min(l, i);
    group_sum.assign(groups, 0.0);
    group_nonzero.assign(groups, 0.0);
    for (size_t j = 0; j < i; ++j) {
      size_t g = j * groups / i;
      group_sum[g] += f[j];
      if (f[j] > 0.0) group_nonzero[g] += 1.0;
    }
    p_buf.assign(i, 0.0);
    q_buf.assign(i, 0.0);
    for (size_t j = 0; j < i; ++j) {
      p_buf[j] = f[j] + (j + 1 == i ? outliers : 0.0);
      size_t g = j * groups / i;
      q_buf[j] = f[j] > 0.0 ? group_sum[g] / group_nonzero[g] : 0.0;
    }
    double kl = std::numeric_limits<double>::infinity();
    if (smooth(p_buf) && smooth(q_buf)) {
      double p_sum = 0.0, q_sum = 0.0;
      for (size_t j = 0; j < i; ++j) {
        p_sum += p_buf[j];
        q_sum += q_buf[j];
      }
      kl = 0.0;
      for (size_t j = 0; j < i; ++j) {
        const double p = p_buf[j] / p_sum, q = q_buf[j] / q_sum;
        kl += p * std::log(p / q);
      }
    }
    if (kl <= best) {
      best = kl;
      best_t = t;
    }
  }
  return best_t;
}

}  // namespace nfuse::quant
