// Observer: the statistics of one activation tensor over many calibration batches, from which
// each calibration method (calib_method.h) picks a clipping range. Bounded memory (one fixed
// histogram per tensor), deterministic, and independent of batch order and batch boundaries.
//
// Histogram scheme. kBins equal bins over [-limit, limit]; 0 is the edge between the two middle
// bins, and exact zeros (ReLU outputs, padding) are counted apart since they are exactly
// representable. `limit` is a power of two: the first non-zero value sets it to the smallest
// power of two >= |x|, and whenever a batch holds a larger |x| the limit doubles (as often as
// needed); doubling merges bins 2m and 2m+1 into bin kBins/4 + m, exactly, so a value lands in
// the same bin as if the final limit had been known from the start. (ORT's HistogramCalibrater
// instead re-bins by interpolation over [-absmax, absmax], which depends on batch order.)
// The cost: absmax fills between half and all of each side's kBins/2 bins.
//
// Inputs: NaN is skipped and counted (nan_count); a batch holding +-inf is rejected whole with
// kInvalidArgument and leaves the observer unchanged (a calibration batch that overflows says
// the model or data is broken, and a clamp would hide it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nfuse/status.h"
#include "quant/calib_method.h"
#include "quant/threshold_search.h"

namespace nfuse::quant {

class Observer {
 public:
  static constexpr size_t kBins = 4096;  // 2048 per side, as ORT's default for |x|

  Observer();

  // Adds one tensor's values from one batch.
  Status update(const float* data, size_t n);
  Status update(std::span<const float> data) { return update(data.data(), data.size()); }
  // Adds everything `other` observed (the result equals observing both streams).
  void merge(const Observer& other);

  // The clipping range `method` picks. Symmetric options give [-t, t] except for minmax, which
  // is always the observed [min, max] (quant_params makes it symmetric). Fails when nothing
  // finite was observed or the options are invalid. All-zero data gives [0, 0].
  //   minmax:     [min, max].
  //   percentile: symmetric: t = the smallest bin edge with at most (100 - p)% of the values
  //               having |x| > t; asymmetric: lo, hi = the bin edges cutting at most
  //               (100 - p) / 2 % from each tail (the zero count is a point at 0). Clamped to
  //               [min, max] and, like minmax, not widened to hold 0 (activation_params does
  //               that); p = 100 gives absmax / [min, max].
  //   mse, sqnr, entropy: threshold searches, see threshold_search.h.
  Result<Range> range(Method method, const MethodOptions& options = {}) const;

  int64_t count() const { return count_; }  // finite values seen, zeros included
  int64_t zero_count() const { return static_cast<int64_t>(zero_count_); }
  int64_t nan_count() const { return nan_count_; }
  float min() const { return min_; }  // meaningful when count() > 0
  float max() const { return max_; }
  double limit() const { return limit_; }  // 0 until a non-zero value arrives
  std::span<const uint64_t> bins() const { return bins_; }
  HistogramView view() const { return {bins_, limit_, zero_count_, min_, max_}; }

 private:
  void grow_to(double absmax);
  Range percentile_range(const MethodOptions& options) const;

  std::vector<uint64_t> bins_;
  double limit_ = 0.0;
  uint64_t zero_count_ = 0;
  int64_t count_ = 0;
  int64_t nan_count_ = 0;
  float min_ = 0.0f;
  float max_ = 0.0f;
};

}  // namespace nfuse::quant
