// fold_batch_norm: folds an inference BatchNormalization that follows a Conv, ConvTranspose or
// Gemm with constant float32 weights (and bias, when present) into those weights and bias.
// A BatchNormalization without such a producer stays as it is.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fold_batch_norm(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
