// The NonMaxSuppression algorithm, shared by the op's shape inference (which needs the number
// of selected boxes) and its reference kernel. Implemented in non_max_suppression.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::ops {

// Selected boxes as [batch, class, box] triples, batch-major, then class, then selection order.
// `inputs` are the node's inputs (boxes, scores, then optional max_output_boxes_per_class,
// iou_threshold, score_threshold; nullptr where omitted). kInvalidModel for mismatched shapes.
Result<std::vector<std::array<int64_t, 3>>> non_max_suppression(const ir::Node& node,
                                                                const std::vector<const ir::Tensor*>& inputs);

}  // namespace nfuse::ops
