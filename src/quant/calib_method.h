// Calibration methods and their options: what `--method minmax|percentile|mse|entropy|sqnr`
// names, shared by the observer (which computes a Range) and the command line (which parses it).
// Kept apart from the observer so callers can name a method without pulling in the histogram.
#pragma once

#include <string_view>

#include "nfuse/status.h"

namespace nfuse::quant {

// A real-valued clipping range [min, max]; min <= max, both finite.
struct Range {
  float min = 0.0f;
  float max = 0.0f;
};

enum class Method {
  kMinMax,      // [min, max] of everything observed
  kPercentile,  // the p-th percentile of |x| (symmetric) or the two tails (asymmetric)
  kMse,         // threshold minimising expected clip + rounding squared error
  kEntropy,     // TensorRT-style KL-divergence threshold search
  kSqnr,        // threshold maximising signal / (rounding noise + gamma * clipping noise)
  kAuto,        // per tensor, whichever of the above its readers' outputs suffer least from
                // (range_selection.h); chosen by quantize_static, not by an Observer
};

struct MethodOptions {
  int bits = 8;               // target bit width (2..16): 8 for u8/s8, 16 for promoted s16 layers
  bool symmetric = true;      // true: s8/s16 range [-t, t]; false: u8 range around [min, max]
  double percentile = 99.99;  // kPercentile: in (0, 100]
  double sqnr_clip_weight = 3.0;  // kSqnr: gamma, weight of clipping noise (1.0 makes it kMse)
};

// "minmax", "percentile", "mse", "entropy", "sqnr", "auto".
std::string_view method_name(Method method);
Result<Method> parse_method(std::string_view name);
// Checks bits and the method's own options.
Status validate(const MethodOptions& options, Method method);

}  // namespace nfuse::quant
