// ErrorMetrics: how far a quantized layer's output is from the float reference, accumulated over
// calibration or validation batches, for the per-layer accuracy report (cosine similarity,
// SNR in dB, max abs error). Streaming: update() once per batch; sums are kept in double, so
// splitting a stream into batches changes results only by double rounding.
//
// Definitions, over all pairs (r = reference, x = result) with both values finite:
//   cosine      = sum r x / (sqrt(sum r^2) sqrt(sum x^2)); exactly 1 when x = r (both all zero
//                 included), 0 when exactly one vector is all zero.
//   snr_db      = 10 log10(sum r^2 / sum (r - x)^2), clamped to [-kSnrCapDb, kSnrCapDb]:
//                 an exact match (noise 0) reports +kSnrCapDb (200 dB, beyond any f32 result:
//                 f32 rounding alone gives ~150 dB), a zero reference with noise -kSnrCapDb.
//   max_abs_error = max |r - x|; mean_abs_error, rmse likewise.
// Non-finite pairs: identical ones (both NaN, or the same infinity) count as matches and are left
// out of the sums; any other pair with a non-finite value is a mismatch: it is counted in
// nonfinite_mismatches and makes max_abs_error +inf.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nfuse::quant {

inline constexpr double kSnrCapDb = 200.0;

struct ErrorSummary {
  int64_t count = 0;  // finite pairs
  int64_t nonfinite_matches = 0;
  int64_t nonfinite_mismatches = 0;
  double cosine = 1.0;
  double snr_db = kSnrCapDb;
  double max_abs_error = 0.0;
  double mean_abs_error = 0.0;
  double rmse = 0.0;
};

class ErrorMetrics {
 public:
  void update(const float* ref, const float* got, size_t n);
  void merge(const ErrorMetrics& other);
  ErrorSummary summary() const;

 private:
  int64_t count_ = 0;
  int64_t nonfinite_matches_ = 0;
  int64_t nonfinite_mismatches_ = 0;
  double dot_ = 0.0;        // sum r x
  double ref_sq_ = 0.0;     // sum r^2
  double got_sq_ = 0.0;     // sum x^2
  double noise_sq_ = 0.0;   // sum (r - x)^2
  double abs_err_ = 0.0;    // sum |r - x|
  double max_abs_ = 0.0;
};

}  // namespace nfuse::quant
