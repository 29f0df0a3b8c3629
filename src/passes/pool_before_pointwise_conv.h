// pool_before_pointwise_conv: GlobalAveragePool(Conv1x1(x)) -> Conv1x1(GlobalAveragePool(x)).
// A 1x1, stride-1, unpadded convolution is linear and per pixel, so the mean over the pixels of
// its output is the convolution of the mean of its input. Squeeze-excitation blocks that follow
// a channel-widening pointwise conv (PaddleOCR's RSE-FPN: 12 -> 96 channels at 240x240) then
// pool the narrow input instead of the wide output, and the wide output keeps only its other
// readers, which the fusion backend can then fuse with the conv so that it never reaches memory.
// Applied only when the conv widens (fewer input channels than output channels), has no fused
// epilogue, and is float32.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status pool_before_pointwise_conv(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
