// C API: post-training quantization (quant::quantize_model, the workflow of `nfuse quantize`).
#include <cmath>
#include <cstdio>

#include "api/api_objects.h"

namespace nfuse::api {
namespace {

template <typename E>
Status check_enum(const char* fn, const char* what, E value, int last) {
  const int v = static_cast<int>(value);
  if (v < 0 || v > last) return invalid_argument(std::string(fn) + ": unknown " + what + " " + std::to_string(v));
  return ok_status();
}

// The flag values of `nfuse quantize`, indexed by the C enums.
constexpr const char* kMethodNames[] = {"minmax", "percentile", "mse", "entropy", "sqnr", "auto"};
constexpr const char* kPrecisionNames[] = {"int8", "int16", "mixed"};

// "r,g,b" in 0..255 units, as parse_image_options reads them.
std::string triple(const float* v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.9g,%.9g,%.9g", v[0], v[1], v[2]);
  return buf;
}

}  // namespace
}  // namespace nfuse::api

using namespace nfuse;
using api::check_enum;
using api::check_handle;
using api::check_out;
using api::guard;

extern "C" {

nfuse_status* nfuse_quantize_options_create(nfuse_quantize_options** out) {
  return api::create("nfuse_quantize_options_create", out, [](nfuse_quantize_options&) {});
}

void nfuse_quantize_options_release(nfuse_quantize_options* options) { api::retire(options); }

nfuse_status* nfuse_quantize_options_set_calibration_data(nfuse_quantize_options* options, const char* folder,
                                                          int64_t limit) {
  constexpr const char* fn = "nfuse_quantize_options_set_calibration_data";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "folder", folder));
    if (limit < 0) return invalid_argument(std::string(fn) + ": limit must be >= 0");
    o.calib = folder;
    o.calib_limit = limit;
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_evaluation_data(nfuse_quantize_options* options, const char* folder) {
  return api::set("nfuse_quantize_options_set_evaluation_data", options, [&](auto& o) -> Status {
    o.eval = folder ? folder : "";
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_method(nfuse_quantize_options* options, nfuse_calibration_method method,
                                                double percentile) {
  constexpr const char* fn = "nfuse_quantize_options_set_method";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "calibration method", method, NFUSE_CALIBRATION_AUTO));
    if (method == NFUSE_CALIBRATION_PERCENTILE && !(percentile > 0.0 && percentile <= 100.0))
      return invalid_argument(std::string(fn) + ": percentile must be in (0, 100]");
    o.method = api::kMethodNames[method];
    if (method == NFUSE_CALIBRATION_PERCENTILE) o.percentile = percentile;
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_activations(nfuse_quantize_options* options, nfuse_activation_scheme scheme) {
  constexpr const char* fn = "nfuse_quantize_options_set_activations";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "activation scheme", scheme, NFUSE_ACTIVATIONS_S8));
    o.act = scheme == NFUSE_ACTIVATIONS_U8 ? "u8" : "s8";
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_precision(nfuse_quantize_options* options, nfuse_precision precision,
                                                   double target_cosine, nfuse_promotion promote) {
  constexpr const char* fn = "nfuse_quantize_options_set_precision";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "precision", precision, NFUSE_PRECISION_MIXED));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "promotion", promote, NFUSE_PROMOTE_AUTO));
    if (precision == NFUSE_PRECISION_MIXED && !(target_cosine > 0.0 && target_cosine <= 1.0))
      return invalid_argument(std::string(fn) + ": target_cosine must be in (0, 1]");
    o.precision = api::kPrecisionNames[precision];
    if (precision == NFUSE_PRECISION_MIXED) {
      o.target_cosine = target_cosine;
      o.promote = promote == NFUSE_PROMOTE_FLOAT ? "float" : promote == NFUSE_PROMOTE_INT16 ? "int16" : "auto";
    }
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_weights(nfuse_quantize_options* options, nfuse_weight_bits bits) {
  constexpr const char* fn = "nfuse_quantize_options_set_weights";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "weight bits", bits, NFUSE_WEIGHTS_INT4));
    o.weights = bits == NFUSE_WEIGHTS_INT8 ? "int8" : "int4";
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_threads(nfuse_quantize_options* options, int threads) {
  constexpr const char* fn = "nfuse_quantize_options_set_threads";
  return api::set(fn, options, [&](auto& o) -> Status {
    if (threads < 1) return invalid_argument(std::string(fn) + ": threads must be >= 1");
    o.threads = threads;
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_equalization(nfuse_quantize_options* options, int cross_layer_equalization,
                                                      int bias_correction) {
  return api::set("nfuse_quantize_options_set_equalization", options, [&](auto& o) -> Status {
    o.cle = cross_layer_equalization != 0;
    o.bias_correction = bias_correction != 0;
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_activation_equalization(nfuse_quantize_options* options,
                                                                 nfuse_activation_equalization mode) {
  constexpr const char* fn = "nfuse_quantize_options_set_activation_equalization";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "activation equalization", mode, NFUSE_EQUALIZE_NONE));
    o.equalize = mode == NFUSE_EQUALIZE_AUTO ? "auto" : mode == NFUSE_EQUALIZE_ACTIVATIONS ? "activations" : "none";
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_reports(nfuse_quantize_options* options, const char* json_path,
                                                 const char* html_path) {
  return api::set("nfuse_quantize_options_set_reports", options, [&](auto& o) -> Status {
    o.report = json_path ? json_path : "";
    o.html = html_path ? html_path : "";
    return ok_status();
  });
}

nfuse_status* nfuse_quantize_options_set_image_preprocessing(nfuse_quantize_options* options, int64_t height,
                                                             int64_t width, const float* mean3, const float* std3,
                                                             nfuse_image_layout layout) {
  constexpr const char* fn = "nfuse_quantize_options_set_image_preprocessing";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_enum(fn, "image layout", layout, NFUSE_IMAGE_NHWC));
    if (height < 0 || width < 0 || (height == 0) != (width == 0))
      return invalid_argument(std::string(fn) + ": height and width must both be positive, or both 0");
    for (int c = 0; std3 && c < 3; ++c)
      if (!(std3[c] > 0.0f) || !std::isfinite(std3[c]))
        return invalid_argument(std::string(fn) + ": std must be positive");
    o.size = height ? std::to_string(height) + "x" + std::to_string(width) : "";
    o.mean = mean3 ? api::triple(mean3) : "";
    o.std_dev = std3 ? api::triple(std3) : "";
    o.layout = layout == NFUSE_IMAGE_NCHW ? "nchw" : "nhwc";
    return ok_status();
  });
}

nfuse_status* nfuse_quantize(nfuse_runtime* runtime, const char* model_path, const char* output_path,
                             nfuse_quantize_options* options, const char** summary, const char** report_json) {
  constexpr const char* fn = "nfuse_quantize";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "options", options));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "model_path", model_path));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "output_path", output_path));
    if (options->options.calib.empty())
      return invalid_argument(std::string(fn) + ": no calibration data (nfuse_quantize_options_set_calibration_data)");
    options->options.model = model_path;
    options->options.output = output_path;
    NFUSE_ASSIGN_OR_RETURN(options->result, quant::quantize_model(options->options));
    runtime->log(NFUSE_LOG_INFO, options->result.summary);
    if (summary) *summary = options->result.summary.c_str();
    if (report_json) *report_json = options->result.report_json.c_str();
    return ok_status();
  });
}

}  // extern "C"
