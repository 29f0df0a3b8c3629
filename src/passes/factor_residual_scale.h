// factor_residual_scale: Add(Mul(x, s), x) -> Mul(x, Add(s, 1)), float32, the Mul read only by
// the Add. Both sides have the broadcast shape of x and s, so any s qualifies; the rewrite pays
// when s is small (a per-channel attention scale, a scalar). Residual squeeze-excitation blocks
// (PaddleOCR's RSE-FPN) add a feature map to its own rescaled copy; factored, the map is read
// once and written once instead of read three times and written twice, the scale's "+ 1" costs
// one element per channel, and the map has a single reader, which lets the fusion backend chain
// the rescale onto the map's producer.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status factor_residual_scale(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
