// RoiAlign: X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] give
// [R, C, output_height, output_width]. coordinate_transformation_mode (opset 16, default
// half_pixel) is output_half_pixel, the only behaviour, at opset 10.
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_roi_align(const ir::Node& node) {
  const auto& attrs = node.attrs;
  const std::string mode = attrs.get_string("mode", "avg");
  if (mode != "avg" && mode != "max") return invalid_model(node.label() + ": mode must be avg or max");
  const std::string ctm = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return invalid_model(node.label() + ": coordinate_transformation_mode must be half_pixel or output_half_pixel");
  }
  if (attrs.get_int("output_height", 1) < 1 || attrs.get_int("output_width", 1) < 1) {
    return invalid_model(node.label() + ": output_height and output_width must be >= 1");
  }
  if (attrs.get_int("sampling_ratio", 0) < 0) return invalid_model(node.label() + ": sampling_ratio must be >= 0");
  return ok_status();
}

Status infer_roi_align(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 2, dtype_bit(ir::DType::kI64) | dtype_bit(ir::DType::kI32)));
  const ir::Shape& x = ctx.shape(0);
  const ir::Shape& rois = ctx.shape(1);
  if (x.rank_known() && x.rank() != 4) return ctx.error("X must be [N, C, H, W]");
  if (rois.rank_known() && (rois.rank() != 2 || (rois[1].is_static() && rois[1].value != 4))) {
    return ctx.error("rois must be [num_rois, 4]");
  }
  std::vector<ir::Dim> dims(4);
  if (rois.rank_known()) dims[0] = rois[0];
  if (!dims[0].is_static() && ctx.shape(2).rank_known() && ctx.shape(2).rank() == 1) dims[0] = ctx.shape(2)[0];
  if (x.rank_known()) dims[1] = x[1];
  dims[2] = ir::Dim(ctx.attrs().get_int("output_height", 1));
  dims[3] = ir::Dim(ctx.attrs().get_int("output_width", 1));
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(dims))};
  return ok_status();
}

}  // namespace

void register_roi_align_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "RoiAlign", .min_inputs = 3, .max_inputs = 3, .verify = verify_roi_align, .infer = infer_roi_align});
}

}  // namespace nfuse::ops
