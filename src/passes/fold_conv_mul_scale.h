// fold_conv_mul_scale: folds a Mul by a constant per-output-channel (or scalar) tensor that
// follows a Conv into its weights and bias. Exporters such as paddle2onnx write folded
// BatchNorms as Conv -> Mul -> Add; with fold_conv_add_bias the chain becomes one Conv.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fold_conv_mul_scale(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
