// shape_through_quantize: a Shape (or Size) reading a float tensor that is also quantized
// (x -> QuantizeLinear) reads the quantized tensor instead, which has the same shape. Exporters
// that put fake quantization on a layer's output often leave shape arithmetic (dynamic batch
// Reshapes) on the float tensor; that extra consumer kept x alive and stopped the QDQ fusion
// passes, which require the QuantizeLinear to be the float output's only consumer.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status shape_through_quantize(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
