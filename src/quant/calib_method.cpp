#include "quant/calib_method.h"

#include <cmath>
#include <string>

namespace nfuse::quant {

std::string_view method_name(Method method) {
  switch (method) {
    case Method::kMinMax: return "minmax";
    case Method::kPercentile: return "percentile";
    case Method::kMse: return "mse";
    case Method::kEntropy: return "entropy";
    case Method::kSqnr: return "sqnr";
    case Method::kAuto: return "auto";
  }
  return "?";
}

Result<Method> parse_method(std::string_view name) {
  for (Method m :
       {Method::kMinMax, Method::kPercentile, Method::kMse, Method::kEntropy, Method::kSqnr, Method::kAuto}) {
    if (method_name(m) == name) return m;
  }
  return invalid_argument("unknown calibration method '" + std::string(name) +
                          "' (expected minmax, percentile, mse, entropy, sqnr or auto)");
}

Status validate(const MethodOptions& options, Method method) {
  if (options.bits < 2 || options.bits > 16) {
    return invalid_argument("calibration bit width " + std::to_string(options.bits) + " outside 2..16");
  }
  if ((method == Method::kPercentile || method == Method::kAuto) &&
      !(std::isfinite(options.percentile) && options.percentile > 0.0 && options.percentile <= 100.0)) {
    return invalid_argument("percentile " + std::to_string(options.percentile) + " outside (0, 100]");
  }
  if (method == Method::kSqnr && !(std::isfinite(options.sqnr_clip_weight) && options.sqnr_clip_weight > 0.0)) {
    return invalid_argument("sqnr clip weight must be finite and > 0");
  }
  return ok_status();
}

}  // namespace nfuse::quant
