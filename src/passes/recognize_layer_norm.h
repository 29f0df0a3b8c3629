// recognize_layer_norm: replaces the decomposed layer normalization that exporters emit below
// opset 17 (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then optionally Mul gamma
// and Add beta) by one LayerNormalization (opset 17) over the trailing reduced axes.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status recognize_layer_norm(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
