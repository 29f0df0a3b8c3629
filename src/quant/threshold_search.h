// The threshold searches behind the mse, sqnr and entropy calibration methods, on an observer's
// histogram. Apart from the observer so the accumulation and the search can be read (and
// changed) separately.
//
// Candidates: thresholds t_i = min(i * w, absmax) for i = 1 .. ceil(absmax / w), w the bin
// width, absmax = max(|min|, |max|). A threshold t clips to
//   symmetric:  [-t, t]                                   step = t / (2^(bits-1) - 1)
//   asymmetric: [min(0, max(min, -t)), max(0, min(max, t))]  step = (hi - lo) / (2^bits - 1)
// (the asymmetric range always holds 0, as u8 quantization nudges it to).
//
// mse / sqnr: every non-empty bin stands for its count of values at the bin centre (clamped to
// [min, max]). A value inside the range costs step^2 / 12 (uniform rounding error), one outside
// costs (centre - nearest end)^2 (clipping). Exact zeros cost nothing (0 is representable).
//   mse  minimises  rounding + clipping;
//   sqnr maximises  signal / (rounding + gamma * clipping), signal = sum x^2 (constant in t), so
//        it minimises rounding + gamma * clipping: gamma = 1 gives mse, the default 3 (as AIMET's
//        SQNR encoding analyzer) penalises clipping more. Ties go to the larger threshold.
//   The uniform rounding model over-states rounding for point masses (constant data), so the
//   threshold can land one bin below such a value.
// entropy: TensorRT's KL method on the histogram of |x| (exact zeros left out, as
//   pytorch-quantization does): for each window of i >= L bins, P = the window with every value
//   beyond it added to its last bin; Q = the window merged into L groups (bin j -> j * L / i) and
//   spread back evenly over each group's non-empty bins; both smoothed as ORT and MXNet do (each
//   empty bin gets 1e-4 counts, taken evenly from the non-empty ones; without it a window
//   ending on an empty bin beyond sparse outliers would score infinite), normalised; pick the i
//   minimising KL(P || Q). L = 2^(bits-1) levels for symmetric ranges; for
//   asymmetric ones L = round((2^bits - 1) * t / (hi - lo)), the levels that fall in [0, t]
//   (255 for one-sided data such as ReLU outputs). Two-sided asymmetric data is folded into |x|,
//   an approximation. When the histogram has no more than L bins up to absmax (16-bit targets),
//   quantization is finer than the histogram and the result is absmax.
#pragma once

#include <cstdint>
#include <span>

#include "quant/calib_method.h"

namespace nfuse::quant {

// A signed histogram over [-limit, limit] with an even number of equal bins (so 0 is the edge
// between the two middle bins); exact zeros are counted apart. At least one value is non-zero.
struct HistogramView {
  std::span<const uint64_t> bins;
  double limit = 0.0;
  uint64_t zero_count = 0;
  float min = 0.0f;
  float max = 0.0f;
};

// The clipping range a threshold t gives (see above).
Range range_for_threshold(const HistogramView& h, double t, bool symmetric);

// Expected rounding and clipping squared error (summed over values, not averaged) of range r at
// `bits` under the model above.
struct NoiseEstimate {
  double rounding = 0.0;
  double clipping = 0.0;
};
NoiseEstimate estimate_noise(const HistogramView& h, Range r, int bits, bool symmetric);

// The threshold minimising rounding + clip_weight * clipping (mse: 1, sqnr: gamma).
double search_noise_threshold(const HistogramView& h, int bits, bool symmetric, double clip_weight);
// The KL-divergence threshold.
double search_entropy_threshold(const HistogramView& h, int bits, bool symmetric);

}  // namespace nfuse::quant
