// fuse_residual_add: folds an Add that sums the output of a Conv, ConvTranspose, Gemm or MatMul
// with another tensor of the same shape into that node as a fused residual (ops/fused_epilogue.h:
// nfuse.residual = 1, the other tensor as implicit input 0). Runs before fuse_activation, so an
// activation after the Add fuses too (the epilogue adds the residual before the activation).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_residual_add(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
