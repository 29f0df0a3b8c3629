// fuse_activation: folds an activation that follows a Conv, ConvTranspose, Gemm or MatMul into
// that node as a fused epilogue (ops/fused_epilogue.h): Relu, Clip (Relu6; min/max as constant
// inputs or, before opset 11, attributes), LeakyRelu, Sigmoid, HardSigmoid, HardSwish, and the
// spelled-out forms x * HardSigmoid(x), x * Sigmoid(x) (SiLU), x * Clip(x + b, 0, m) / m and
// Clip(x + b, 0, m) / m (Add -> Clip -> Div/Mul chains, as PaddleOCR exports them). Only when the producer's output feeds
// nothing but the activation, is not a graph output, and the producer has no activation yet.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_activation(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
