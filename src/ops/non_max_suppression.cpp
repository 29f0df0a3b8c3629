// NonMaxSuppression: boxes [B, S, 4], scores [B, C, S], optional scalars
// max_output_boxes_per_class (int64, default 0: select nothing), iou_threshold (default 0) and
// score_threshold (default: none). Output [num_selected, 3] int64 of (batch, class, box); its
// length depends on the values, so infer computes it when every input value is known and leaves
// it unknown otherwise (the runtime re-infers with all values known before running the node).
//
// Per batch and class, candidates scoring above score_threshold are taken greedily by
// descending score (ties: lower box index first), dropping any whose IoU with an already
// selected box exceeds iou_threshold, as onnxruntime and the ONNX reference do.
#include "ops/non_max_suppression.h"
#include "ops/builtin_ops.h"

#include <algorithm>
#include <string>

#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

struct Corners {
  double y_min, x_min, y_max, x_max;
};

Corners corners(const ir::Tensor& boxes, int64_t offset, bool center_point) {
  const double a = boxes.get_double(offset), b = boxes.get_double(offset + 1);
  const double c = boxes.get_double(offset + 2), d = boxes.get_double(offset + 3);
  if (center_point) {  // [x_center, y_center, width, height]
    return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  }
  // [y1, x1, y2, x2] with either corner pair first.
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

bool suppresses(const Corners& p, const Corners& q, double iou_threshold) {
  const double ix_min = std::max(p.x_min, q.x_min), ix_max = std::min(p.x_max, q.x_max);
  const double iy_min = std::max(p.y_min, q.y_min), iy_max = std::min(p.y_max, q.y_max);
  if (ix_max <= ix_min || iy_max <= iy_min) return false;
  const double inter = (ix_max - ix_min) * (iy_max - iy_min);
  const double area_p = (p.x_max - p.x_min) * (p.y_max - p.y_min);
  const double area_q = (q.x_max - q.x_min) * (q.y_max - q.y_min);
  const double uni = area_p + area_q - inter;
  if (area_p <= 0 || area_q <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

Status verify_nms(const ir::Node& node) {
  const int64_t cpb = node.attrs.get_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return invalid_model(node.label() + ": center_point_box must be 0 or 1");
  return ok_status();
}

Status infer_nms(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 2, dtype_bit(ir::DType::kI64) | dtype_bit(ir::DType::kI32)));
  const ir::Shape& b = ctx.shape(0);
  const ir::Shape& s = ctx.shape(1);
  if (b.rank_known() && (b.rank() != 3 || (b[2].is_static() && b[2].value != 4))) {
    return ctx.error("boxes must be [num_batches, spatial_dimension, 4]");
  }
  if (s.rank_known() && s.rank() != 3) return ctx.error("scores must be [num_batches, num_classes, spatial_dimension]");
  ctx.output(0).dtype = ir::DType::kI64;
  ir::Dim selected;
  bool all_known = ctx.value(0) && ctx.value(1);
  for (int i = 2; i < ctx.num_inputs(); ++i) all_known = all_known && (!ctx.has_input(i) || ctx.value(i));
  if (all_known) {
    std::vector<const ir::Tensor*> values;
    for (int i = 0; i < ctx.num_inputs(); ++i) values.push_back(ctx.has_input(i) ? ctx.value(i) : nullptr);
    auto result = non_max_suppression(ctx.node, values);
    if (!result.ok()) return result.status();
    selected = ir::Dim(static_cast<int64_t>(result->size()));
  }
  ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>{selected, ir::Dim(3)});
  return ok_status();
}

}  // namespace

Result<std::vector<std::array<int64_t, 3>>> non_max_suppression(const ir::Node& node,
                                                                const std::vector<const ir::Tensor*>& in) {
  auto input = [&in](size_t i) { return i < in.size() ? in[i] : nullptr; };
  const ir::Tensor& boxes = *in.at(0);
  const ir::Tensor& scores = *in.at(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
      scores.dim(2) != boxes.dim(1)) {
    return invalid_model(node.label() + ": boxes " + ir::dims_to_string(boxes.dims()) + " and scores " +
                         ir::dims_to_string(scores.dims()) + " do not match [B, S, 4] and [B, C, S]");
  }
  for (size_t i = 2; i < 5; ++i) {
    if (input(i) && input(i)->numel() != 1) return invalid_model(node.label() + ": threshold inputs must be scalars");
  }
  const int64_t num_batches = boxes.dim(0), spatial = boxes.dim(1), num_classes = scores.dim(1);
  const int64_t max_out = std::min(input(2) ? input(2)->get_int(0) : 0, spatial);
  const double iou_threshold = input(3) ? input(3)->get_double(0) : 0.0;
  const bool has_score_threshold = input(4) != nullptr;
  const double score_threshold = has_score_threshold ? input(4)->get_double(0) : 0.0;
  const bool center_point = node.attrs.get_int("center_point_box", 0) != 0;

  std::vector<std::array<int64_t, 3>> result;
  if (max_out <= 0) return result;
  std::vector<int64_t> order;
  std::vector<Corners> kept;
  for (int64_t b = 0; b < num_batches; ++b) {
    for (int64_t c = 0; c < num_classes; ++c) {
      const int64_t score_base = (b * num_classes + c) * spatial;
      order.clear();
      for (int64_t i = 0; i < spatial; ++i) {
        if (!has_score_threshold || scores.get_double(score_base + i) > score_threshold) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return scores.get_double(score_base + x) > scores.get_double(score_base + y);
      });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Corners box = corners(boxes, (b * spatial + i) * 4, center_point);
        bool drop = false;
        for (const Corners& k : kept) drop = drop || suppresses(k, box, iou_threshold);
        if (drop) continue;
        kept.push_back(box);
        result.push_back({b, c, i});
      }
    }
  }
  return result;
}

void register_non_max_suppression_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "NonMaxSuppression", .min_inputs = 2, .max_inputs = 5, .verify = verify_nms, .infer = infer_nms});
}

}  // namespace nfuse::ops
