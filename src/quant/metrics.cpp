#include "quant/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nfuse::quant {

void ErrorMetrics::update(const float* ref, const float* got, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float r = ref[i], x = got[i];
    if (!std::isfinite(r) || !std::isfinite(x)) {
      const bool same = (std::isnan(r) && std::isnan(x)) || (std::isinf(r) && r == x);
      if (same) {
        ++nonfinite_matches_;
      } else {
        ++nonfinite_mismatches_;
      }
      continue;
    }
    const double rd = r, xd = x, e = rd - xd;
    ++count_;
    dot_ += rd * xd;
    ref_sq_ += rd * rd;
    got_sq_ += xd * xd;
    noise_sq_ += e * e;
    abs_err_ += std::fabs(e);
    max_abs_ = std::max(max_abs_, std::fabs(e));
  }
}

void ErrorMetrics::merge(const ErrorMetrics& o) {
  count_ += o.count_;
  nonfinite_matches_ += o.nonfinite_matches_;
  nonfinite_mismatches_ += o.nonfinite_mismatches_;
  dot_ += o.dot_;
  ref_sq_ += o.ref_sq_;
  got_sq_ += o.got_sq_;
  noise_sq_ += o.noise_sq_;
  abs_err_ += o.abs_err_;
  max_abs_ = std::max(max_abs_, o.max_abs_);
}

ErrorSummary ErrorMetrics::summary() const {
  ErrorSummary s;
  s.count = count_;
  s.nonfinite_matches = nonfinite_matches_;
  s.nonfinite_mismatches = nonfinite_mismatches_;
  if ((ref_sq_ == 0.0 && got_sq_ == 0.0) || noise_sq_ == 0.0) {
    s.cosine = 1.0;  // an exact match is 1, not 1 - the double rounding of the quotient
  } else if (ref_sq_ == 0.0 || got_sq_ == 0.0) {
    s.cosine = 0.0;
  } else {
    s.cosine = std::clamp(dot_ / (std::sqrt(ref_sq_) * std::sqrt(got_sq_)), -1.0, 1.0);
  }
  if (noise_sq_ == 0.0) {
    s.snr_db = kSnrCapDb;
  } else if (ref_sq_ == 0.0) {
    s.snr_db = -kSnrCapDb;
  } else {
    s.snr_db = std::clamp(10.0 * std::log10(ref_sq_ / noise_sq_), -kSnrCapDb, kSnrCapDb);
  }
  s.max_abs_error = nonfinite_mismatches_ > 0 ? std::numeric_limits<double>::infinity() : max_abs_;
  if (count_ > 0) {
    s.mean_abs_error = abs_err_ / static_cast<double>(count_);
    s.rmse = std::sqrt(noise_sq_ / static_cast<double>(count_));
  }
  return s;
}

}  // namespace nfuse::quant
