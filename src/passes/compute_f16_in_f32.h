// compute_f16_in_f32: float16 and bfloat16 nodes compute in float32. Every node of an op that
// follows its input's float type (convolutions, matmuls, element-wise, pooling, normalization,
// layout, comparisons: the list in the .cpp) reads its 16-bit inputs through a Cast to f32 and
// writes f32, with a Cast back to the 16-bit type after it; 16-bit constants (the weights) are
// converted once, here, not per run. Then back-to-back Casts f32 -> 16 -> f32 between two such
// nodes are dropped, so a whole FP16 network runs in f32 on the optimized f32 kernels and only
// the values the graph keeps in 16 bits are rounded: graph inputs and outputs, and the operands
// of ops outside the list (which run in 16 bits as the file says).
// The choice, as ONNX Runtime's CPU provider makes it for the ops it has no f16 kernels for:
// f32 arithmetic is at least as accurate as f16 arithmetic, and the optimized kernels are f32.
// The results differ from a strict f16 evaluation by the f16 roundings of intermediates that
// are no longer made (about 1e-3 relative per layer at most).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status compute_f16_in_f32(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
