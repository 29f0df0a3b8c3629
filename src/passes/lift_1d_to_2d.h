// lift_1d_to_2d: Conv, ConvTranspose, MaxPool and AveragePool over one spatial axis become their
// 2-D forms over a 1 x L plane, between an Unsqueeze and a Squeeze of that unit axis. Both are
// views (the cpu and ref backends alias them: nothing is copied), so 1-D layers run on the 2-D
// kernels: im2col + GEMM, direct and depthwise convolution, the pooling rows. An STFT written as
// a Conv with a 512-tap kernel at stride 160 becomes one GEMM over its frames.
// Runs after the fusions, so an activation or residual already folded into a Conv stays on it
// (the residual operand gets its own Unsqueeze). f32 tensors with a constant weight; any N, C
// and L, static or not.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status lift_1d_to_2d(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
