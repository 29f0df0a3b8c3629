// fold_conv_add_bias: folds an Add of a constant per-output-channel (or scalar) tensor that
// follows a Conv or ConvTranspose into that node's bias. Exporters such as paddle2onnx write
// every conv bias this way; folding it lets activation fusion see the conv as the producer.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fold_conv_add_bias(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
