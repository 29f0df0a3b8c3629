// fuse_matmul_bias: folds the bias Add that exporters write after every Linear layer
// (MatMul(X, W) + b, ONNX MatMul having no bias input) into the MatMul as a fused bias
// (ops/fused_epilogue.h: nfuse.bias = 1, b as the last implicit input), so the GEMM epilogue adds
// it instead of a separate pass over the output. Runs before fuse_residual_add and
// fuse_activation, so a residual Add or an activation after the bias fuses too.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_matmul_bias(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
