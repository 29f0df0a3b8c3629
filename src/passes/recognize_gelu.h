// recognize_gelu: replaces the expanded GELU that exporters emit by one nfuse.Gelu
// (ops/gelu.cpp): x * 0.5 * (1 + Erf(x / sqrt 2)) in any association of the products, with
// x / sqrt 2 as Div or as Mul by 1 / sqrt 2; and the tanh form
// 0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) as Gelu(approximate = "tanh").
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status recognize_gelu(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
