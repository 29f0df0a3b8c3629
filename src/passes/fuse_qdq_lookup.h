// fuse_qdq_lookup: keeps element-wise activations of a quantized graph in 8 bits. A
// DequantizeLinear -> element-wise float ops -> QuantizeLinear region is a function of one byte,
// so it becomes nfuse.QLinearLookup(x_q, table) with the 256-entry table computed at pass time
// by running the region itself (through the evaluator: the ref kernels) on every input code.
// ONNX Runtime's com.microsoft QLinearSigmoid / QLinearLeakyRelu become the same op, their
// tables computed by their ref kernels.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/fold_constants.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

// Rewrites every matching region (pattern in the .cpp). Without an evaluator it changes
// nothing. Fails only on an internal inconsistency; a region the evaluator cannot run stays.
Status fuse_qdq_lookup(ir::Graph& graph, const NodeEvaluator& evaluator, PassLog& log);

}  // namespace nfuse::passes
