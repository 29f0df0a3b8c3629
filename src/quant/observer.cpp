#include "quant/observer.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace nfuse::quant {

Observer::Observer() : bins_(kBins, 0) {}

void Observer::grow_to(double absmax) {
  if (limit_ == 0.0) {
    int e = 0;
    double m = std::frexp(absmax, &e);  // absmax = m * 2^e, m in [0.5, 1)
    limit_ = m == 0.5 ? absmax : std::ldexp(1.0, e);
    return;
  }
  while (limit_ < absmax) {
    std::vector<uint64_t> merged(kBins, 0);
    for (size_t j = 0; j < kBins; ++j) merged[kBins / 4 + j / 2] += bins_[j];
    bins_.swap(merged);
    limit_ *= 2.0;
  }
}

Status Observer::update(const float* data, size_t n) {
  size_t infs = 0, first_inf = 0;
  double absmax = 0.0;
  for (size_t i = 0; i < n; ++i) {
    float x = data[i];
    if (std::isinf(x)) {
      if (infs++ == 0) first_inf = i;
    } else if (!std::isnan(x)) {
      absmax = std::max(absmax, std::fabs(static_cast<double>(x)));
    }
  }
  if (infs > 0) {
    return invalid_argument("calibration batch holds " + std::to_string(infs) + " infinite value(s), first at " +
                            std::to_string(first_inf) + "; batch ignored");
  }
  if (absmax > limit_) grow_to(absmax);
  const double scale = static_cast<double>(kBins) / (2.0 * limit_);  // a power of two
  for (size_t i = 0; i < n; ++i) {
    float x = data[i];
    if (std::isnan(x)) {
      ++nan_count_;
      continue;
    }
    if (count_ == 0) {
      min_ = max_ = x;
    } else {
      min_ = std::min(min_, x);
      max_ = std::max(max_, x);
    }
    ++count_;
    if (x == 0.0f) {
      ++zero_count_;
      continue;
    }
    double pos = std::floor((static_cast<double>(x) + limit_) * scale);
    size_t j = static_cast<size_t>(std::clamp(pos, 0.0, static_cast<double>(kBins - 1)));
    ++bins_[j];
  }
  return ok_status();
}

void Observer::merge(const Observer& other) {
  if (other.count_ == 0) {
    nan_count_ += other.nan_count_;
    return;
  }
  std::vector<uint64_t> theirs = other.bins_;
  double their_limit = other.limit_;
  if (their_limit > limit_) grow_to(their_limit);
  while (their_limit != 0.0 && their_limit < limit_) {  // bring theirs up to our limit
    std::vector<uint64_t> merged(kBins, 0);
    for (size_t j = 0; j < kBins; ++j) merged[kBins / 4 + j / 2] += theirs[j];
    theirs.swap(merged);
    their_limit *= 2.0;
  }
  for (size_t j = 0; j < kBins; ++j) bins_[j] += theirs[j];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  zero_count_ += other.zero_count_;
  nan_count_ += other.nan_count_;
}

Range Observer::percentile_range(const MethodOptions& options) const {
  const size_t half = kBins / 2;
  const double w = 2.0 * limit_ / static_cast<double>(kBins);
  const double total = static_cast<double>(count_);
  if (options.symmetric) {
    const double cut = (100.0 - options.percentile) / 100.0 * total;  // values allowed above t
    double above = 0.0;
    double t = 0.0;
    for (size_t j = half; j-- > 0;) {  // |x| bin j covers [j w, (j + 1) w)
      double c = static_cast<double>(bins_[half + j] + bins_[half - 1 - j]);
      if (above + c > cut) {
        t = static_cast<double>(j + 1) * w;
        break;
      }
      above += c;
    }
    double absmax = std::max(std::fabs(static_cast<double>(min_)), std::fabs(static_cast<double>(max_)));
    t = std::min(t, absmax);
    return {static_cast<float>(-t), static_cast<float>(t)};
  }
  const double cut = (100.0 - options.percentile) / 200.0 * total;  // per tail
  // From the top: bins kBins-1 .. half, then the zero point, then half-1 .. 0.
  double hi = 0.0;
  {
    double above = 0.0;
    bool found = false;
    for (size_t j = kBins; j-- > half;) {
      double c = static_cast<double>(bins_[j]);
      if (above + c > cut) {
        hi = -limit_ + static_cast<double>(j + 1) * w;
        found = true;
        break;
      }
      above += c;
    }
    if (!found && above + static_cast<double>(zero_count_) <= cut) {
      above += static_cast<double>(zero_count_);
      for (size_t j = half; j-- > 0;) {
        double c = static_cast<double>(bins_[j]);
        above += c;
        if (above > cut) {
          hi = -limit_ + static_cast<double>(j + 1) * w;
          break;
        }
      }
    }
  }
  double lo = 0.0;
  {
    double below = 0.0;
    bool found = false;
    for (size_t j = 0; j < half; ++j) {
      double c = static_cast<double>(bins_[j]);
      if (below + c > cut) {
        lo = -limit_ + static_cast<double>(j) * w;
        found = true;
        break;
      }
      below += c;
    }
    if (!found && below + static_cast<double>(zero_count_) <= cut) {
      below += static_cast<double>(zero_count_);
      for (size_t j = half; j < kBins; ++j) {
        below += static_cast<double>(bins_[j]);
        if (below > cut) {
          lo = -limit_ + static_cast<double>(j) * w;
          break;
        }
      }
    }
  }
  lo = std::max(lo, static_cast<double>(min_));
  hi = std::min(hi, static_cast<double>(max_));
  if (lo > hi) lo = hi = std::clamp(0.0, static_cast<double>(min_), static_cast<double>(max_));
  return {static_cast<float>(lo), static_cast<float>(hi)};
}

Result<Range> Observer::range(Method method, const MethodOptions& options) const {
  NFUSE_RETURN_IF_ERROR_PLAIN(validate(options, method));
  if (method == Method::kAuto)
    return invalid_argument("method auto is chosen per tensor (range_selection.h), not by one histogram");
  if (count_ == 0) {
    return invalid_argument("no finite values observed (" + std::to_string(nan_count_) + " NaN)");
  }
  if (method == Method::kMinMax) return Range{min_, max_};
  if (limit_ == 0.0) return Range{0.0f, 0.0f};  // all zeros
  if (method == Method::kPercentile) {
    if (options.percentile >= 100.0) {
      if (!options.symmetric) return Range{min_, max_};
      float a = std::max(std::fabs(min_), std::fabs(max_));
      return Range{-a, a};
    }
    return percentile_range(options);
  }
  const HistogramView h = view();
  double t = 0.0;
  switch (method) {
    case Method::kMse: t = search_noise_threshold(h, options.bits, options.symmetric, 1.0); break;
    case Method::kSqnr:
      t = search_noise_threshold(h, options.bits, options.symmetric, options.sqnr_clip_weight);
      break;
    case Method::kEntropy: t = search_entropy_threshold(h, options.bits, options.symmetric); break;
    default: return internal_error("unhandled calibration method");
  }
  return range_for_threshold(h, t, options.symmetric);
}

}  // namespace nfuse::quant
