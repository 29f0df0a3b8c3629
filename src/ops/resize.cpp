// Resize (opset 10: X, scales; opset 11+: X, roi, scales, sizes) and Upsample (opset 7: the
// `scales` attribute; opset 9: a scales input). Output dims are `sizes` when given, otherwise
// floor(input_dim * scale), so they are known only when those inputs' values are.
#include <cmath>
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

// Keeps a hostile scale from asking for an absurd allocation (2^40 elements is 4 TiB of f32).
constexpr double kMaxOutputElements = 1099511627776.0;

struct ResizeInputs {
  int roi = -1;
  int scales = -1;
  int sizes = -1;
};

// Opset 0 means "not set" (hand-built graphs): the latest form.
ResizeInputs resize_inputs(const ir::Node& node) {
  if (node.op_type == "Upsample" || (node.opset > 0 && node.opset < 11)) return {-1, 1, -1};
  return {1, 2, 3};
}

bool one_of(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (s == o) return true;
  return false;
}

Status verify_resize(const ir::Node& node) {
  const ir::Attributes& at = node.attrs;
  const std::string mode = at.get_string("mode", "nearest");
  if (!one_of(mode, {"nearest", "linear", "cubic", "bilinear"})) {
    return invalid_model(node.label() + ": unknown mode '" + mode + "'");
  }
  const std::string ctm = at.get_string("coordinate_transformation_mode", "half_pixel");
  if (!one_of(ctm, {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nearest",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize"})) {
    return unsupported(node.label() + ": coordinate_transformation_mode '" + ctm + "' is not supported");
  }
  const std::string nearest = at.get_string("nearest_mode", "round_prefer_floor");
  if (!one_of(nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})) {
    return invalid_model(node.label() + ": unknown nearest_mode '" + nearest + "'");
  }
  const int64_t exclude = at.get_int("exclude_outside", 0);
  if (exclude != 0 && exclude != 1) return invalid_model(node.label() + ": exclude_outside must be 0 or 1");
  if (at.get_int("antialias", 0) != 0 || at.has("axes") || at.has("keep_aspect_ratio_policy")) {
    return unsupported(node.label() + ": antialias, axes and keep_aspect_ratio_policy (opset 18) are not supported");
  }
  const float a = at.get_float("cubic_coeff_a", -0.75f);
  if (!std::isfinite(a)) return invalid_model(node.label() + ": cubic_coeff_a must be finite");
  return ok_status();
}

// An input that is absent, or present with zero elements ("" or an empty tensor), is unset.
bool input_set(const ir::InferContext& ctx, int i) {
  if (i < 0 || !ctx.has_input(i)) return false;
  if (const ir::Tensor* v = ctx.value(i)) return v->numel() > 0;
  auto n = ctx.shape(i).static_numel();
  return !n || *n > 0;
}

Status check_total(const ir::InferContext& ctx, const std::vector<ir::Dim>& dims) {
  double total = 1.0;
  for (const ir::Dim& d : dims)
    if (d.is_static()) total *= static_cast<double>(d.value);
  if (total > kMaxOutputElements) return ctx.error("output would have more than 2^40 elements");
  return ok_status();
}

Status dims_from_sizes(const ir::InferContext& ctx, const ir::Tensor& sizes, int rank, std::vector<ir::Dim>* out) {
  if (sizes.numel() != rank) {
    return ctx.error("sizes has " + std::to_string(sizes.numel()) + " elements for a rank-" + std::to_string(rank) +
                     " input");
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t s = sizes.get_int(i);
    if (s < 0) return ctx.error("sizes[" + std::to_string(i) + "] is negative");
    (*out)[static_cast<size_t>(i)] = ir::Dim(s);
  }
  return ok_status();
}

Status dims_from_scales(const ir::InferContext& ctx, const std::vector<double>& scales, std::vector<ir::Dim>* out) {
  const ir::Shape& in = ctx.shape(0);
  if (static_cast<int>(scales.size()) != in.rank()) {
    return ctx.error("scales has " + std::to_string(scales.size()) + " elements for a rank-" +
                     std::to_string(in.rank()) + " input");
  }
  for (int i = 0; i < in.rank(); ++i) {
    const double s = scales[static_cast<size_t>(i)];
    if (!std::isfinite(s) || s <= 0.0) return ctx.error("scales[" + std::to_string(i) + "] must be positive");
    if (!in[i].is_static()) continue;
    const double d = std::floor(static_cast<double>(in[i].value) * s);
    if (d > kMaxOutputElements) return ctx.error("scales[" + std::to_string(i) + "] is too large");
    (*out)[static_cast<size_t>(i)] = ir::Dim(static_cast<int64_t>(d));
  }
  return ok_status();
}

Status infer_resize(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  const ResizeInputs ri = resize_inputs(ctx.node);
  const bool has_sizes = input_set(ctx, ri.sizes);
  const bool has_scales = input_set(ctx, ri.scales);
  const bool scales_attr = ctx.node.op_type == "Upsample" && !ctx.has_input(1);
  if (has_sizes && has_scales) return ctx.error("only one of scales and sizes may be given");
  if (!has_sizes && !has_scales && !scales_attr) return ctx.error("one of scales and sizes must be given");
  if (ri.roi >= 0 && input_set(ctx, ri.roi) && ctx.value(ri.roi) && in.rank_known() &&
      ctx.value(ri.roi)->numel() != 2 * in.rank()) {
    return ctx.error("roi must have 2 * rank elements");
  }
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  std::vector<ir::Dim> dims(static_cast<size_t>(in.rank()), ir::Dim());
  if (has_sizes) {
    if (const ir::Tensor* sizes = ctx.value(ri.sizes)) NFUSE_RETURN_IF_ERROR_PLAIN(dims_from_sizes(ctx, *sizes, in.rank(), &dims));
  } else if (scales_attr) {
    std::vector<double> scales;
    for (float s : ctx.attrs().get_floats("scales")) scales.push_back(s);
    NFUSE_RETURN_IF_ERROR_PLAIN(dims_from_scales(ctx, scales, &dims));
  } else if (const ir::Tensor* t = ctx.value(ri.scales)) {
    if (!ir::dtype_is_float(t->dtype())) return ctx.error("scales must be a float tensor");
    std::vector<double> scales;
    for (int64_t i = 0; i < t->numel(); ++i) scales.push_back(t->get_double(i));
    NFUSE_RETURN_IF_ERROR_PLAIN(dims_from_scales(ctx, scales, &dims));
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(check_total(ctx, dims));
  for (int i = 0; i < in.rank(); ++i) {
    const ir::Dim& o = dims[static_cast<size_t>(i)];
    if (o.is_static() && o.value > 0 && in[i].is_static() && in[i].value == 0) {
      return ctx.error("cannot resize an empty dim " + std::to_string(i) + " to a non-empty one");
    }
  }
  ctx.output(0).shape = ir::Shape(std::move(dims));
  return ok_status();
}

}  // namespace

void register_resize_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "Resize", .min_inputs = 1, .max_inputs = 4, .verify = verify_resize, .infer = infer_resize});
  registry.add(ir::OpSchema{
      .op_type = "Upsample", .min_inputs = 1, .max_inputs = 2, .verify = verify_resize, .infer = infer_resize});
}

}  // namespace nfuse::ops
